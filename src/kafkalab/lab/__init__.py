"""The local lab: systemd containers that behave like VMs, for the Kafka roles to provision.

Run it as ``python -m kafkalab.lab {engine,image,up,down,status}`` (the command line is in __main__.py).
Modules, each with one job; import a name from the module that owns it:

- common: LabError, running commands, the repository root, installing missing tools with apt.
- engine: a Docker engine that answers (installs docker.io and starts dockerd if needed).
- systemd_host: molecule/systemd_host.yml, the docker settings every lab and molecule host is started
  with, and the `docker run` flags they make.
- image: the base image, built from debootstrap and docker import, tagged with its recipe's hash.
- hosts: inventory -> LabSpec, the lab's network and containers, its SSH key, up/down/status.

Logic (argument lists, recipe hashing, inventory parsing, network checks) lives in small pure
functions; the rest shells out to the docker CLI, debootstrap and ansible-inventory.
"""

from __future__ import annotations

from kafkalab.lab.common import LabError, ensure_tools
from kafkalab.lab.hosts import read_inventory

# What code outside the lab imports from the package (kafkalab.bench).
__all__ = ["LabError", "ensure_tools", "read_inventory"]

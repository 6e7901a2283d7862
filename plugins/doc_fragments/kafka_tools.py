"""The option every module that runs Kafka's command-line tools on a node shares (extends_documentation_fragment)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  bin_dir:
    description: Where the kafka-* command-line tools (and zookeeper-shell) are on the node.
    type: path
    default: /usr/local/bin
"""

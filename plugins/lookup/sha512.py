"""sha512: the sha512 of files on the controller, hashed in the playbook's own process.

The preflight checks every artifact it hands the hosts (the Kafka and ZooKeeper archives, the JMX agent, the
lag exporter's and Spark's wheels and jars) against the sha512 the repository pins, on every run. `stat` with
`checksum_algorithm` does the same hashing in a module process of its own, which costs about a second a file
before it reads a byte (the spark scenario's preflight looked at nine files that way). A missing path, or one
that is not a regular file, gives '' (which no pinned sha512 equals), so a check still fails closed and can say
why."""

from __future__ import annotations

DOCUMENTATION = r"""
name: sha512
short_description: The sha512 (lower-case hex) of each file on the controller; '' for a path that is no file
description:
  - Hashes in the controller's playbook process, never on a host. Relative paths are taken from the
    current directory, as ansible.builtin.stat would on localhost.
options:
  _terms:
    description: Paths on the controller.
    required: true
"""

RETURN = r"""
_raw:
  description: One sha512 per path, in order ('' where the path is no regular file).
  type: list
  elements: str
"""

import hashlib
import os
from typing import Any

from ansible.plugins.lookup import LookupBase

_CHUNK = 1 << 20


def file_sha512(path: str) -> str:
    """The lower-case hex sha512 of the regular file at path, or '' when there is none (or it cannot be read)."""
    if not os.path.isfile(path):
        return ""
    digest = hashlib.sha512()
    try:
        with open(path, "rb") as stream:
            while block := stream.read(_CHUNK):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()


class LookupModule(LookupBase):  # type: ignore[misc]  # ansible-core ships no type information
    def run(self, terms: list[Any], variables: Any = None, **kwargs: Any) -> list[str]:
        self.set_options(var_options=variables, direct=kwargs)
        return [file_sha512(os.path.expanduser(str(term))) for term in terms]

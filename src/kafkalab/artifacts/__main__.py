"""`python -m kafkalab.artifacts`: the command line lives in cli.py."""

from __future__ import annotations

import sys

from kafkalab.artifacts.cli import main

if __name__ == "__main__":
    sys.exit(main())

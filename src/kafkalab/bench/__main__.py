"""`python -m kafkalab.bench`: the command line is kafkalab.bench.cli."""

from __future__ import annotations

import sys

from kafkalab.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())

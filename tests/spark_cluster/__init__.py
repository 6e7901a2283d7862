"""The Spark pipeline suite (a package, so its conftest never shadows tests/cluster/conftest.py)."""

"""The day-2 journeys (a package, so that its conftest and the cluster suite's do not collide)."""

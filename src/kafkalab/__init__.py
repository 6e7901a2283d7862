"""Controller-side tooling for the Kafka lab: artifacts, lab substrate, verification helpers."""

"""`make bench` (`python -m kafkalab.bench`): measured numbers for provisioning, the Kafka cluster and the Spark job.

The command line and what it measures are described in cli. The modules, one job each:

  cli             the command line: runs the sections, writes bench.json, bench.txt and the plots
  provisioning    section: cold converge and no-op re-run of playbooks/site.yml
  physical        section: disk write and loopback TCP limits
  kafka_perf      section: Kafka's perf tools and kafka-python, producers and consumers
  spark_job       section: the deployed Spark job on a bench topic
  cluster         the machine, the brokers' addresses, the bench's own topics and groups
  runner          Ansible against the inventory (through kafkalab.ansible_driver) and its JSON documents
  parsing         what the tools print, as numbers
  spark_progress  the Spark job's progress log: batches, latencies, processed rates
  stats           percentiles and fractions of the physical limits
  toml_writer     the Spark job's settings file
  report          the printed table, and the measurements a document lacks
  plots           the PNG plots
  measure         MeasurementError, progress messages, recording a failed measurement
  settings        the fixed settings and the paths the roles use
"""

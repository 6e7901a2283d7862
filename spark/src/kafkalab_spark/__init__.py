"""The kafkalab Spark consumer: Kafka topics to Parquet, exactly once, with a quarantine and progress."""

# Bump when a change to the job makes the checkpoints an older build wrote unusable: a query's sources or
# sinks, or the state of a stateful query (the windowed counts). The spark_consumer role reads it from the
# wheel and refuses to deploy the build over older checkpoints, unless spark_consumer_new_checkpoint.
# 2: the windowed counts read the archive's committed files instead of Kafka.
CHECKPOINT_FORMAT = 2

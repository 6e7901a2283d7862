"""The kafkalab Spark consumer: Kafka topics to Parquet, exactly once, with a quarantine and progress."""

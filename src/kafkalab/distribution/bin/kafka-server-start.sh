#!/usr/bin/env bash
# kafka-server-start.sh: starts a Kafka @@KAFKA_VERSION@@ broker and/or controller (@@MAIN_CLASS@@)
# with the server logging config (rolling files under $LOG_DIR) and a 1 GiB heap unless overridden.
if [ $# -lt 1 ]; then
  echo "USAGE: $0 [-daemon] server.properties [--override property=value]*" >&2
  exit 1
fi
base_dir=$(cd "$(dirname "$0")/.." && pwd)

export KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:-@@SERVER_LOG_CONFIG_OPT@@}
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}

extra_args=(-name kafkaServer)
if [ "$1" = "-daemon" ]; then
  extra_args=(-daemon "${extra_args[@]}")
  shift
fi
exec "$base_dir/bin/kafka-run-class.sh" "${extra_args[@]}" @@MAIN_CLASS@@ "$@"

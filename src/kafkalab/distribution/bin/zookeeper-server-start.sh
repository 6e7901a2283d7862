#!/usr/bin/env bash
# zookeeper-server-start.sh: starts the ZooKeeper server bundled with Kafka @@KAFKA_VERSION@@
# (@@MAIN_CLASS@@) with the server logging config and a 512 MiB heap unless overridden.
if [ $# -lt 1 ]; then
  echo "USAGE: $0 [-daemon] zookeeper.properties" >&2
  exit 1
fi
base_dir=$(cd "$(dirname "$0")/.." && pwd)

export KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:-@@SERVER_LOG_CONFIG_OPT@@}
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx512M -Xms512M}

extra_args=(-name zookeeper)
if [ "$1" = "-daemon" ]; then
  extra_args=(-daemon "${extra_args[@]}")
  shift
fi
exec "$base_dir/bin/kafka-run-class.sh" "${extra_args[@]}" @@MAIN_CLASS@@ "$@"

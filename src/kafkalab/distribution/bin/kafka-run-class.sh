#!/usr/bin/env bash
# kafka-run-class.sh: runs one Java main class of this Kafka @@KAFKA_VERSION@@ distribution
# (assembled from Maven by kafkalab.artifacts; see README.assembled). Every bin/ wrapper ends here.
#
# Environment it honours (same names as Apache's script):
#   JAVA_HOME                   use $JAVA_HOME/bin/java instead of java from PATH
#   KAFKA_HEAP_OPTS             default -Xmx256M (server wrappers set their own default)
#   KAFKA_JVM_PERFORMANCE_OPTS  default G1 settings below
#   KAFKA_OPTS                  extra JVM options, appended last
#   KAFKA_LOG4J_OPTS            logging config; default: config/@@TOOLS_LOG_CONFIG@@ (stderr, WARN)
#   LOG_DIR                     directory for log files (-Dkafka.logs.dir); default <dist>/logs
#   JMX_PORT, KAFKA_JMX_OPTS    remote JMX
#   CLASSPATH                   entries put before libs/*.jar
# Options before the class name: -daemon (run in background, output to $LOG_DIR/<name>.out), -name <name>.

usage() {
  echo "USAGE: $0 [-daemon] [-name servicename] classname [opts]" >&2
  exit 1
}

base_dir=$(cd "$(dirname "$0")/.." && pwd)

daemon_mode=false
daemon_name=kafka
while [ $# -gt 0 ]; do
  case "$1" in
    -daemon) daemon_mode=true; shift ;;
    -name) [ $# -ge 2 ] || usage; daemon_name=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
main_class=$1
shift

# libs/*.jar in glob order, so the classpath is the same on every host.
classpath=${CLASSPATH:-}
for jar in "$base_dir"/libs/*.jar; do
  classpath=${classpath:+$classpath:}$jar
done

LOG_DIR=${LOG_DIR:-$base_dir/logs}
# Tools run by unprivileged users must still work when the log dir is not theirs to create.
mkdir -p "$LOG_DIR" 2>/dev/null || true

KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx256M}
KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}
KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:-@@TOOLS_LOG_CONFIG_OPT@@}
if [ -n "${JMX_PORT:-}" ]; then
  KAFKA_JMX_OPTS=${KAFKA_JMX_OPTS:--Dcom.sun.management.jmxremote -Dcom.sun.management.jmxremote.authenticate=false -Dcom.sun.management.jmxremote.ssl=false}
  KAFKA_JMX_OPTS="$KAFKA_JMX_OPTS -Dcom.sun.management.jmxremote.port=$JMX_PORT"
fi

if [ -n "${JAVA_HOME:-}" ]; then
  java_bin=$JAVA_HOME/bin/java
else
  java_bin=java
fi

# The *_OPTS variables hold several JVM flags each: word splitting them is intended (as in Apache's script).
# shellcheck disable=SC2086
set -- $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS ${KAFKA_JMX_OPTS:-} \
  "-Dkafka.logs.dir=$LOG_DIR" $KAFKA_LOG4J_OPTS ${KAFKA_OPTS:-} \
  -cp "$classpath" "$main_class" "$@"

if [ "$daemon_mode" = true ]; then
  nohup "$java_bin" "$@" >"$LOG_DIR/$daemon_name.out" 2>&1 </dev/null &
else
  exec "$java_bin" "$@"
fi

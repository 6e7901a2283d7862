#!/usr/bin/env bash
# zookeeper-shell.sh: ZooKeeper CLI bundled with Kafka @@KAFKA_VERSION@@ (@@MAIN_CLASS@@).
# Like Apache's script, the first argument is the server: it is passed on as `-server host:port[/chroot]`.
if [ $# -lt 1 ]; then
  echo "USAGE: $0 zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]" >&2
  exit 1
fi
exec "$(dirname "$0")/kafka-run-class.sh" @@MAIN_CLASS@@ -server "$@"

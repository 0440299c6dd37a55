#!/usr/bin/env bash
# cbt/kafka: one Apache Kafka node in KRaft mode (broker and controller in one process).
# server.properties is written from defaults below, then every KAFKA_CFG_<NAME> variable sets <name> with `_` read
# as `.` (KAFKA_CFG_ADVERTISED_LISTENERS -> advertised.listeners). The storage under /var/lib/kafka/data is
# formatted on the first start only (cluster id: KAFKA_CLUSTER_ID, else a new random one).
# KAFKA_HEAP_OPTS sets the JVM heap (default -Xmx768m -Xms256m).
# `cbt-kafka health` (the image's healthcheck) succeeds once every non-controller listener accepts connections; any
# other arguments run as given.
set -euo pipefail
# Written at every start, in /tmp: it stays writable under a read-only root file system (Kubernetes).
CONFIG=${KAFKA_CONFIG_FILE:-/tmp/kafka-server.properties}

if [ "${1:-}" = health ]; then
  listeners=$(sed -n 's/^listeners=//p' "$CONFIG" | tr ',' '\n' | grep -v '^CONTROLLER:')
  [ -n "$listeners" ] || exit 1
  for port in $(echo "$listeners" | sed 's/.*://'); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || exit 1
  done
  exit 0
fi
[ $# -gt 0 ] && exec "$@"

DATA=/var/lib/kafka/data
declare -A settings=(
  [process.roles]=broker,controller
  [node.id]=1
  [controller.quorum.voters]=1@127.0.0.1:9093
  [listeners]=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
  [advertised.listeners]=PLAINTEXT://$(hostname):9092
  [controller.listener.names]=CONTROLLER
  [inter.broker.listener.name]=PLAINTEXT
  [listener.security.protocol.map]=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
  [log.dirs]=$DATA
  [num.partitions]=1
  [offsets.topic.replication.factor]=1
  [offsets.topic.num.partitions]=4
  [transaction.state.log.replication.factor]=1
  [transaction.state.log.min.isr]=1
  [share.coordinator.state.topic.replication.factor]=1
  [share.coordinator.state.topic.min.isr]=1
  [group.initial.rebalance.delay.ms]=0
  [auto.create.topics.enable]=false
  [delete.topic.enable]=true
  [log.retention.hours]=168
)
while IFS='=' read -r name value; do
  key=$(echo "${name#KAFKA_CFG_}" | tr '[:upper:]_' '[:lower:].')
  settings[$key]=$value
done < <(env | grep '^KAFKA_CFG_' || true)
: >"$CONFIG"
for key in "${!settings[@]}"; do echo "$key=${settings[$key]}" >>"$CONFIG"; done

java=(java ${KAFKA_HEAP_OPTS:--Xmx768m -Xms256m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
      -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp '/opt/kafka/libs/*')
if [ ! -f "$DATA/meta.properties" ]; then
  cluster_id=${KAFKA_CLUSTER_ID:-$("${java[@]}" kafka.tools.StorageTool random-uuid)}
  "${java[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$CONFIG"
fi
exec "${java[@]}" kafka.Kafka "$CONFIG"

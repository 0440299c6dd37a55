#!/usr/bin/env bash
# cbt/kafka: one Apache Kafka node in KRaft mode (broker and controller in one process).
# server.properties is written from defaults below, then every KAFKA_CFG_<NAME> variable sets <name> with `_` read
# as `.` (KAFKA_CFG_ADVERTISED_LISTENERS -> advertised.listeners). The storage under /var/lib/kafka/data is
# formatted on the first start only (cluster id: KAFKA_CLUSTER_ID, else a new random one).
#
# Authentication: clients connect to the listener CLIENT (port 9092) with SASL/SCRAM-SHA-512 as the user KAFKA_USER
# (default cbt) with the password KAFKA_PASSWORD (required: the image refuses to start without one). The user is
# created when the storage is formatted (`format --add-scram`), so the password of a volume is the one of its first
# start; the node authenticates to itself with the same credentials. The controller listener binds 127.0.0.1 only.
# Every listener must authenticate (SASL_PLAINTEXT or SASL_SSL) unless it binds loopback or
# KAFKA_ALLOW_UNAUTHENTICATED=yes (test fixtures whose clients carry no credentials).
# TLS: with KAFKA_TLS_DIR (a folder holding tls.crt and tls.key, e.g. a mounted kubernetes.io/tls Secret; the key
# unencrypted PKCS#8; ca.crt, when there, the issuer), SSL and SASL_SSL listeners serve that certificate, which must
# name the advertised host.
#
# Least privilege: KAFKA_PASSWORD_<SERVICE> for each of COORDINATOR, WORKER, BOUNDS_CACHE, INVALIDATOR and API (all
# five, or none) gives each service a SCRAM user of its own, cbt-<service>, and turns the authorizer on: KAFKA_USER
# stays the one super user (operators' tools, the node itself), and each service may use only its own topics and
# consumer groups, never delete or alter a topic (the ACLs: deploy/docker/kafka/acls.txt). The users' passwords are
# set and the ACLs written at every start, once the broker answers; `health` is ok only after that.
# Every password is at least 16 characters.
#
# KAFKA_HEAP_OPTS sets the JVM heap (default -Xmx768m -Xms256m).
# `cbt-kafka health` (the image's healthcheck) succeeds once every non-controller listener accepts connections; any
# other arguments run as given.
set -euo pipefail
# Written at every start, in /tmp: it stays writable under a read-only root file system (Kubernetes).
CONFIG=${KAFKA_CONFIG_FILE:-/tmp/kafka-server.properties}

if [ "${1:-}" = health ]; then
  if grep -q '^authorizer.class.name=' "$CONFIG" 2>/dev/null; then [ -f /tmp/cbt-kafka-principals-ready ] || exit 1; fi
  listeners=$(sed -n 's/^listeners=//p' "$CONFIG" | tr ',' '\n' | grep -v '^CONTROLLER:')
  [ -n "$listeners" ] || exit 1
  for port in $(echo "$listeners" | sed 's/.*://'); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || exit 1
  done
  exit 0
fi
[ $# -gt 0 ] && exec "$@"

fail() { echo "cbt/kafka: $*" >&2; exit 64; }

USER_NAME=${KAFKA_USER:-cbt}
PASSWORD=${KAFKA_PASSWORD:-}
# Both go into server.properties (a JAAS line in double quotes) and the format command's SCRAM record.
case "$USER_NAME" in
  '' | *[!A-Za-z0-9._-]*) fail "KAFKA_USER may hold letters, digits and . _ - only" ;;
esac
MIN_PASSWORD=16
check_password() {  # name value
  case "$2" in
    *[!A-Za-z0-9._~+/=-]*) fail "$1 may hold letters, digits and . _ ~ + / = - only" ;;
  esac
  [ -z "$2" ] || [ ${#2} -ge $MIN_PASSWORD ] ||
    fail "$1 has ${#2} characters: use at least $MIN_PASSWORD (e.g. openssl rand -hex 24)"
}
check_password KAFKA_PASSWORD "$PASSWORD"

SERVICES=(coordinator worker bounds-cache invalidator api)
declare -A service_password=()
for service in "${SERVICES[@]}"; do
  var=KAFKA_PASSWORD_$(echo "$service" | tr 'a-z-' 'A-Z_')
  if [ -n "${!var:-}" ]; then
    check_password "$var" "${!var}"
    service_password[$service]=${!var}
  fi
done
if [ ${#service_password[@]} -ne 0 ] && [ ${#service_password[@]} -ne ${#SERVICES[@]} ]; then
  fail "set KAFKA_PASSWORD_<SERVICE> for all of ${SERVICES[*]} (each its own user) or for none"
fi

DATA=/var/lib/kafka/data
declare -A settings=(
  [process.roles]=broker,controller
  [node.id]=1
  [controller.quorum.voters]=1@127.0.0.1:9093
  [listeners]=CLIENT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
  [advertised.listeners]=CLIENT://$(hostname):9092
  [controller.listener.names]=CONTROLLER
  [inter.broker.listener.name]=CLIENT
  [listener.security.protocol.map]=CONTROLLER:PLAINTEXT,CLIENT:SASL_PLAINTEXT
  [sasl.enabled.mechanisms]=SCRAM-SHA-512
  [sasl.mechanism.inter.broker.protocol]=SCRAM-SHA-512
  [log.dirs]=$DATA
  [num.partitions]=1
  [offsets.topic.replication.factor]=1
  [offsets.topic.num.partitions]=4
  [transaction.state.log.replication.factor]=1
  [transaction.state.log.min.isr]=1
  [share.coordinator.state.topic.replication.factor]=1
  [share.coordinator.state.topic.min.isr]=1
  [group.initial.rebalance.delay.ms]=1000
  [auto.create.topics.enable]=false
  [delete.topic.enable]=true
  [log.retention.hours]=168
)
while IFS='=' read -r name value; do
  key=$(echo "${name#KAFKA_CFG_}" | tr '[:upper:]_' '[:lower:].')
  settings[$key]=$value
done < <(env | grep '^KAFKA_CFG_' || true)

# Each listener's protocol (the map, else its name when that is a protocol), checked and given its SASL and TLS
# settings.
declare -A protocol_of=()
for entry in $(echo "${settings[listener.security.protocol.map]}" | tr ',' ' '); do
  protocol_of[${entry%%:*}]=${entry#*:}
done
uses_sasl=no
for listener in $(echo "${settings[listeners]}" | tr ',' ' '); do
  name=${listener%%://*}
  address=${listener#*://}
  host=${address%:*}
  protocol=${protocol_of[$name]:-$name}
  case "$protocol" in
    SASL_PLAINTEXT | SASL_SSL)
      uses_sasl=yes
      lower=$(echo "$name" | tr '[:upper:]' '[:lower:]')
      jaas="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$USER_NAME\" password=\"$PASSWORD\";"
      settings[listener.name.$lower.scram-sha-512.sasl.jaas.config]=$jaas
      ;;
    PLAINTEXT | SSL)
      if [ "$host" != 127.0.0.1 ] && [ "$host" != localhost ] && [ "${KAFKA_ALLOW_UNAUTHENTICATED:-}" != yes ]; then
        fail "listener $name ($listener) is $protocol: clients would need no credentials; use SASL_PLAINTEXT or" \
             "SASL_SSL (KAFKA_ALLOW_UNAUTHENTICATED=yes allows it, for test fixtures only)"
      fi
      ;;
    *) fail "listener $name: unknown security protocol $protocol" ;;
  esac
  case "$protocol" in
    SSL | SASL_SSL)
      tls=${KAFKA_TLS_DIR:-}
      [ -n "$tls" ] && [ -r "$tls/tls.crt" ] && [ -r "$tls/tls.key" ] ||
        fail "listener $name is $protocol: set KAFKA_TLS_DIR to a folder with tls.crt and tls.key"
      # Kafka's PEM key store: the private key, then the certificate chain, in one file.
      (umask 077 && cat "$tls/tls.key" "$tls/tls.crt" >/tmp/kafka-tls.pem)
      settings[ssl.keystore.type]=PEM
      settings[ssl.keystore.location]=/tmp/kafka-tls.pem
      # The node connects to itself over this listener too: it trusts the issuer (ca.crt), else the certificate.
      settings[ssl.truststore.type]=PEM
      settings[ssl.truststore.location]=$tls/$([ -r "$tls/ca.crt" ] && echo ca.crt || echo tls.crt)
      ;;
  esac
done
if [ "$uses_sasl" = yes ] && [ -z "$PASSWORD" ]; then
  fail "set KAFKA_PASSWORD, the password of the user $USER_NAME (e.g. openssl rand -hex 24)"
fi
if [ ${#service_password[@]} -ne 0 ]; then
  [ "$uses_sasl" = yes ] || fail "KAFKA_PASSWORD_<SERVICE> needs a SASL listener (the users log in through it)"
  settings[authorizer.class.name]=org.apache.kafka.metadata.authorizer.StandardAuthorizer
  # The node's own requests: over SASL as KAFKA_USER, and to its controller over the loopback-only PLAINTEXT
  # listener, as ANONYMOUS (no client outside the container can reach that listener).
  settings[super.users]="User:$USER_NAME;User:ANONYMOUS"
  settings[allow.everyone.if.no.acl.found]=false
fi

(umask 077 && : >"$CONFIG")  # it holds the password
for key in "${!settings[@]}"; do echo "$key=${settings[$key]}" >>"$CONFIG"; done

java=(java ${KAFKA_HEAP_OPTS:--Xmx768m -Xms256m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
      -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp '/opt/kafka/libs/*')
if [ ! -f "$DATA/meta.properties" ]; then
  cluster_id=${KAFKA_CLUSTER_ID:-$("${java[@]}" kafka.tools.StorageTool random-uuid)}
  # The command goes through a java argument file, readable by this user only and removed afterwards: the
  # password never appears on a command line (which every process of the host may read in /proc).
  format_args="$CONFIG.format-args"
  (umask 077 && echo "kafka.tools.StorageTool format -t $cluster_id -c $CONFIG" >"$format_args")
  [ -z "$PASSWORD" ] || echo "--add-scram SCRAM-SHA-512=[name=$USER_NAME,password=$PASSWORD]" >>"$format_args"
  # Its output lists the bootstrap records, the SCRAM user's salted keys among them: not for the log.
  "${java[@]}" "@$format_args" >/dev/null || { rm -f "$format_args"; fail "formatting the storage in $DATA failed"; }
  rm -f "$format_args"
  [ -z "$PASSWORD" ] || echo "$USER_NAME" >"$DATA/cbt-scram-user"
  echo "cbt/kafka: storage formatted (cluster $cluster_id${PASSWORD:+, SCRAM-SHA-512 user $USER_NAME})"
elif [ "$uses_sasl" = yes ] && [ "$(cat "$DATA/cbt-scram-user" 2>/dev/null)" != "$USER_NAME" ]; then
  fail "the storage in $DATA was formatted without the SCRAM user $USER_NAME (before the image required" \
       "authentication, or with another KAFKA_USER): clients could not log in; start on an empty volume"
fi
# The services' users and their ACLs, once the broker answers: through its first SASL listener, as KAFKA_USER, with
# the credentials in files only this user may read (removed after), never on a command line.
tool() {  # a Kafka command-line tool in a JVM of its own, its arguments from a file (they may hold a password)
  local args=$1
  java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties \
    -cp '/opt/kafka/libs/*' "@$args" \
    >/tmp/cbt-kafka-tool.log 2>&1
}

grant_principals() {
  unset KAFKA_PASSWORD  # (the tools it starts get no password in their environment; the values are in variables)
  for service in "${SERVICES[@]}"; do unset "KAFKA_PASSWORD_$(echo "$service" | tr 'a-z-' 'A-Z_')"; done
  local client="" name protocol port bootstrap
  for listener in $(echo "${settings[listeners]}" | tr ',' ' '); do
    name=${listener%%://*}
    case "${protocol_of[$name]:-$name}" in SASL_PLAINTEXT | SASL_SSL) client=$name; break ;; esac
  done
  protocol=${protocol_of[$client]:-$client}
  port=$(echo "${settings[listeners]}" | tr ',' '\n' | sed -n "s/^$client:\/\/.*://p" | head -1)
  bootstrap=$(echo "${settings[advertised.listeners]}" | tr ',' '\n' | sed -n "s/^$client:\/\///p" | head -1)
  bootstrap=${bootstrap:-127.0.0.1:$port}
  local admin=/tmp/cbt-kafka-admin.properties args=/tmp/cbt-kafka-tool.args
  (umask 077 && {
    echo "security.protocol=$protocol"
    echo "sasl.mechanism=SCRAM-SHA-512"
    echo "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$USER_NAME\" password=\"$PASSWORD\";"
    if [ "$protocol" = SASL_SSL ]; then
      echo "ssl.truststore.type=PEM"
      echo "ssl.truststore.location=${settings[ssl.truststore.location]}"
    fi
  } >"$admin")
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 1; done
  local prefix=${KAFKA_TOPIC_PREFIX-cbt.} attempt
  for attempt in $(seq 1 30); do
    local failed=no
    for service in "${SERVICES[@]}"; do
      (umask 077 && echo "kafka.admin.ConfigCommand --bootstrap-server $bootstrap --command-config $admin" \
        "--alter --entity-type users --entity-name cbt-$service" \
        "--add-config SCRAM-SHA-512=[password=${service_password[$service]}]" >"$args")
      tool "$args" || { failed=yes; break; }
    done
    if [ $failed = no ]; then
      # Each line of acls.txt: a user, its operations, the pattern type, and resources (kind:name after the prefix).
      while read -r who operations pattern resources; do
        case "$who" in '' | '#'*) continue ;; esac
        local flags=""
        for operation in $(echo "$operations" | tr ',' ' '); do flags="$flags --operation $operation"; done
        for resource in $resources; do
          local resource_name=${resource#*:}
          [ "$resource_name" = '*' ] && resource_name=""
          flags="$flags --${resource%%:*} $prefix$resource_name"
        done
        echo "org.apache.kafka.tools.AclCommand --bootstrap-server $bootstrap --command-config $admin --add" \
          "--allow-principal User:cbt-$who --resource-pattern-type $pattern $flags" >"$args"
        tool "$args" || { failed=yes; break; }
      done </opt/kafka/acls.txt
    fi
    [ $failed = yes ] || break
    sleep 2
  done
  rm -f "$admin" "$args"
  if [ $failed = yes ]; then
    echo "cbt/kafka: the services' users and ACLs could not be written (attempt $attempt):" >&2
    tail -5 /tmp/cbt-kafka-tool.log >&2
    return 1
  fi
  : >/tmp/cbt-kafka-principals-ready
  echo "cbt/kafka: ${#SERVICES[@]} services' users (cbt-<service>) and their ACLs are in place; the authorizer is on"
}

if [ ${#service_password[@]} -ne 0 ]; then
  grant_principals &  # (a subshell: it exits once done; the broker's own environment holds no password)
fi
# The broker reads the password from its config file (the JAAS line): not from its environment, where any process
# that may read /proc/<pid>/environ would find it.
unset KAFKA_PASSWORD
for service in "${SERVICES[@]}"; do unset "KAFKA_PASSWORD_$(echo "$service" | tr 'a-z-' 'A-Z_')"; done
exec "${java[@]}" kafka.Kafka "$CONFIG"

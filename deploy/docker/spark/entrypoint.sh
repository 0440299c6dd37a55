#!/usr/bin/env bash
# cbt/spark: one image, three roles, chosen by the first argument:
#   master                 a Spark standalone master          (SPARK_MASTER_HOST, default this hostname; port 7077)
#   worker [MASTER_URL]    a Spark standalone worker          (SPARK_MASTER_URL; SPARK_WORKER_CORES, _MEMORY)
#   connect                the Spark Connect server, port 15002, with Delta Lake: on SPARK_MASTER_URL when set
#                          (a standalone cluster), else local[*] in this container; SPARK_DRIVER_MEMORY (1g),
#                          SPARK_CONNECT_CONF ("key=value …", extra --conf)
#   health                 the image's healthcheck: the role this container runs answers on its port
# Anything else runs as given (e.g. bash).
#
# Authentication, required (a role refuses to start without it):
#   SPARK_AUTH_SECRET                 every role: the cluster's shared secret (spark.authenticate). The master, the
#                                     workers and the Connect server (the driver) must hold the same one; executors
#                                     get it from their worker. It goes into a properties file only this user reads
#                                     (the defaults plus the secret), never onto a command line, and leaves the
#                                     environment before Spark starts.
#   SPARK_CONNECT_AUTHENTICATE_TOKEN  connect: the token every client must present (gRPC header
#                                     `authorization: Bearer <token>`), read by Spark from its environment, so it is
#                                     never a Spark setting a client could read back.
# Both: at least 32 characters of letters, digits and . _ ~ + / = - (openssl rand -hex 32).
set -euo pipefail
ROLE_FILE=/tmp/cbt-spark-role
MIN_SECRET_LENGTH=32
# The address other containers reach this one at (executors call the driver back; the master calls workers).
own_address() { hostname -i | awk '{print $1}'; }
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

require_secret() {  # require_secret ROLE NAME WHAT: the variable NAME is set and hard to guess, else exit 64
  local value=${!2:-}
  if [ -z "$value" ]; then
    echo "cbt/spark $1: set $2, $3 (e.g. openssl rand -hex 32)" >&2; exit 64
  fi
  case "$value" in
    *[!A-Za-z0-9._~+/=-]*) echo "cbt/spark $1: $2 may hold letters, digits and . _ ~ + / = - only" >&2; exit 64 ;;
  esac
  if [ ${#value} -lt $MIN_SECRET_LENGTH ]; then
    echo "cbt/spark $1: $2 has ${#value} characters, at least $MIN_SECRET_LENGTH are needed" >&2; exit 64
  fi
}

# The defaults plus spark.authenticate and the cluster's secret, in a file only this user reads: AUTH_CONF.
authenticated_conf() {
  require_secret "$1" SPARK_AUTH_SECRET "the secret the master, workers and Connect server share"
  local dir=/tmp/cbt-spark
  AUTH_CONF=$dir/spark-defaults.conf
  (
    umask 077
    mkdir -p "$dir"
    { cat "${SPARK_CONF_DIR:-$SPARK_HOME/conf}/spark-defaults.conf" 2>/dev/null || true
      printf '\n# cbt/spark entrypoint: authentication between the master, workers, driver and executors\n'
      printf 'spark.authenticate true\nspark.authenticate.secret %s\n' "$SPARK_AUTH_SECRET"
    } >"$AUTH_CONF"
  )
  unset SPARK_AUTH_SECRET
}

case "${1:-connect}" in master | worker | connect) echo "$1" >"$ROLE_FILE" ;; esac

case "${1:-connect}" in
  master)
    shift
    authenticated_conf master
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "${SPARK_MASTER_HOST:-$(hostname)}" --port 7077 --webui-port 8080 --properties-file "$AUTH_CONF" "$@"
    ;;
  worker)
    shift
    master=${1:-${SPARK_MASTER_URL:?worker: give the master URL (spark://host:7077) or set SPARK_MASTER_URL}}
    [ $# -gt 0 ] && shift
    authenticated_conf worker
    export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-$(own_address)}
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "$SPARK_LOCAL_IP" --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-2g}" \
      --work-dir /tmp/spark-work --webui-port 8081 --properties-file "$AUTH_CONF" "$@" "$master"
    ;;
  connect)
    shift
    require_secret connect SPARK_CONNECT_AUTHENTICATE_TOKEN "the token Spark Connect's clients present"
    authenticated_conf connect
    export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-$(own_address)}
    conf=(--conf "spark.master=${SPARK_MASTER_URL:-local[*]}" --conf "spark.driver.host=$SPARK_LOCAL_IP"
          --conf spark.driver.bindAddress=0.0.0.0)
    for pair in ${SPARK_CONNECT_CONF:-}; do conf+=(--conf "$pair"); done
    exec "$SPARK_HOME/bin/spark-submit" --class org.apache.spark.sql.connect.service.SparkConnectServer \
      --name cbt-spark-connect --driver-memory "${SPARK_DRIVER_MEMORY:-1g}" --properties-file "$AUTH_CONF" \
      "${conf[@]}" "$@" spark-internal
    ;;
  health)
    case "$(cat "$ROLE_FILE" 2>/dev/null)" in
      master) answers "${SPARK_MASTER_HOST:-$(hostname)}" 7077 ;;
      worker) answers "${SPARK_LOCAL_IP:-$(own_address)}" 8081 ;;
      connect) answers 127.0.0.1 15002 ;;
      *) exit 1 ;;
    esac
    ;;
  *)
    exec "$@"
    ;;
esac

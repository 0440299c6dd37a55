#!/usr/bin/env bash
# cbt/spark: one image, three roles, chosen by the first argument:
#   master                 a Spark standalone master          (SPARK_MASTER_HOST, default this hostname; port 7077)
#   worker [MASTER_URL]    a Spark standalone worker          (SPARK_MASTER_URL; SPARK_WORKER_CORES, _MEMORY)
#   connect                the Spark Connect server, port 15002, with Delta Lake: on SPARK_MASTER_URL when set
#                          (a standalone cluster), else local[*] in this container; SPARK_DRIVER_MEMORY (1g),
#                          SPARK_CONNECT_CONF ("key=value …", extra --conf)
#   health                 the image's healthcheck: the role this container runs answers on its port
# Anything else runs as given (e.g. bash).
set -euo pipefail
ROLE_FILE=/tmp/cbt-spark-role
# The address other containers reach this one at (executors call the driver back; the master calls workers).
own_address() { hostname -i | awk '{print $1}'; }
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

case "${1:-connect}" in master | worker | connect) echo "$1" >"$ROLE_FILE" ;; esac

case "${1:-connect}" in
  master)
    shift
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "${SPARK_MASTER_HOST:-$(hostname)}" --port 7077 --webui-port 8080 "$@"
    ;;
  worker)
    shift
    master=${1:-${SPARK_MASTER_URL:?worker: give the master URL (spark://host:7077) or set SPARK_MASTER_URL}}
    [ $# -gt 0 ] && shift
    export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-$(own_address)}
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "$SPARK_LOCAL_IP" --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-2g}" \
      --work-dir /tmp/spark-work --webui-port 8081 "$@" "$master"
    ;;
  connect)
    shift
    export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-$(own_address)}
    conf=(--conf "spark.master=${SPARK_MASTER_URL:-local[*]}" --conf "spark.driver.host=$SPARK_LOCAL_IP"
          --conf spark.driver.bindAddress=0.0.0.0)
    for pair in ${SPARK_CONNECT_CONF:-}; do conf+=(--conf "$pair"); done
    exec "$SPARK_HOME/bin/spark-submit" --class org.apache.spark.sql.connect.service.SparkConnectServer \
      --name cbt-spark-connect --driver-memory "${SPARK_DRIVER_MEMORY:-1g}" "${conf[@]}" "$@" spark-internal
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

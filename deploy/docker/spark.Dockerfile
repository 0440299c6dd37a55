# cbt/spark: Spark 4.0 (the jars of the pip pyspark the workspace pins) with Delta Lake 4.0, on a Java 17 runtime.
# One image for a standalone cluster's master and workers and for the Spark Connect server the services use; the
# role is the first argument (spark/entrypoint.sh): `master`, `worker spark://master:7077`, `connect`.
# Ports: Connect 15002, master 7077 (UI 8080), worker UI 8081. Data: /data/warehouse (shared by the Connect server
# and the workers), /data/metastore (the Connect server's Derby catalog).
# Build with deploy/docker/build.sh (context.sh fetches the jars first; the build needs no network).
ARG JRE_BASE=eclipse-temurin:17-jre
FROM ${JRE_BASE}
ENV SPARK_HOME=/opt/spark LANG=C.UTF-8
ENV PATH=$SPARK_HOME/bin:$PATH SPARK_NO_DAEMONIZE=1
RUN groupadd --gid 10001 spark \
 && useradd --uid 10001 --gid spark --home-dir /opt/spark --no-create-home --shell /usr/sbin/nologin spark \
 && mkdir -p /data/warehouse /data/metastore /tmp/spark-work \
 && chown -R spark:spark /data /tmp/spark-work
COPY var/docker/context/spark/jars /opt/spark/jars
COPY var/docker/context/delta-jars /opt/spark/jars
COPY var/docker/context/spark/bin /opt/spark/bin
COPY var/docker/context/spark/sbin /opt/spark/sbin
COPY deploy/docker/spark/spark-defaults.conf deploy/docker/spark/log4j2.properties /opt/spark/conf/
COPY deploy/docker/spark/entrypoint.sh /usr/local/bin/cbt-spark
WORKDIR /data
USER 10001:10001
EXPOSE 15002 7077 8080 8081
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=30 CMD ["/usr/local/bin/cbt-spark", "health"]
ENTRYPOINT ["/usr/local/bin/cbt-spark"]
CMD ["connect"]

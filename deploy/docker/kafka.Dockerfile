# cbt/kafka: Apache Kafka 4 (the broker jars deploy/local/kafka-pom.xml pins) as one KRaft node, for local use and
# CI; production runs a real cluster. Port 9092 (SASL/SCRAM-SHA-512: the user KAFKA_USER, default cbt, with the
# password KAFKA_PASSWORD, required; TLS from KAFKA_TLS_DIR); configured by KAFKA_CFG_* variables
# (kafka/entrypoint.sh); data in /var/lib/kafka/data, formatted on first start (which creates the user).
# Build with deploy/docker/build.sh (context.sh fetches the jars first; the build needs no network).
ARG JRE_BASE=eclipse-temurin:17-jre
FROM ${JRE_BASE}
RUN groupadd --gid 10001 kafka \
 && useradd --uid 10001 --gid kafka --home-dir /var/lib/kafka --no-create-home --shell /usr/sbin/nologin kafka \
 && mkdir -p /var/lib/kafka/data \
 && chown -R kafka:kafka /var/lib/kafka
COPY var/docker/context/kafka-libs /opt/kafka/libs
COPY deploy/local/kafka-log4j2.properties /opt/kafka/log4j2.properties
COPY deploy/docker/kafka/entrypoint.sh /usr/local/bin/cbt-kafka
COPY deploy/docker/kafka/acls.txt /opt/kafka/acls.txt
WORKDIR /var/lib/kafka
USER 10001:10001
EXPOSE 9092
# Listening means the broker has started (it opens its listeners last); with the services' users, their ACLs must be
# written too (a JVM per tool run, some 20: the start period allows for a busy host). No JVM is started to check.
HEALTHCHECK --interval=5s --timeout=3s --start-period=180s --retries=10 CMD ["/usr/local/bin/cbt-kafka", "health"]
ENTRYPOINT ["/usr/local/bin/cbt-kafka"]

# cbt/redis: Debian's redis-server with the append-only file on (the hot state survives a restart), for local use
# and CI. Port 6379; data in /data. Settings: redis/redis.conf; one user, cbt, with the password REDIS_PASSWORD
# (required; redis/entrypoint.sh); extra arguments are passed to redis-server.
ARG DEBIAN_BASE=debian:bookworm-slim
FROM ${DEBIAN_BASE}
# The redis user gets a fixed id (999, as the official redis image) before the package would pick one.
# Debian stable's own version: security updates replace it in place, so pinning would break the next build.
# hadolint ignore=DL3008
RUN groupadd --system --gid 999 redis \
 && useradd --system --uid 999 --gid redis --home-dir /var/lib/redis --no-create-home --shell /usr/sbin/nologin redis \
 && apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data \
 && chown redis:redis /data
COPY deploy/docker/redis/redis.conf /etc/redis/cbt.conf
COPY deploy/docker/redis/entrypoint.sh /usr/local/bin/cbt-redis
WORKDIR /data
USER 999:999
EXPOSE 6379
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=10 CMD ["cbt-redis", "health"]
ENTRYPOINT ["cbt-redis"]

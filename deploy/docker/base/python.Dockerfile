# A local stand-in for python:3.11-slim-bookworm, from Debian's packages (deploy/docker/bases.sh builds it).
ARG DEBIAN_BASE=debian:bookworm-slim
FROM ${DEBIAN_BASE}
# Debian stable's own versions: security updates replace them in place, so pinning would break the next build.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV LANG=C.UTF-8
CMD ["python3"]

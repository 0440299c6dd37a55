# cbt/bounds-cache: the bounds-cache service alone (distribution services/bounds-cache, command cbt-bounds-cache):
# it scans the external models' bounds on their schedules (SQL through Spark Connect, or an exec model's
# `python3` script from this image's environment). No JVM, no build tools.
# Build from the repository root with deploy/docker/build.sh: it fetches the wheelhouse first (context.sh), so the
# build itself needs no network. Ports inside the container: /healthz and /readyz 8081, /metrics 9464.
ARG PYTHON_BASE=python:3.11-slim-bookworm

FROM ${PYTHON_BASE} AS builder
ENV PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheelhouse PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
# Third-party dependencies first, each wheel checked against its hash (the files uv.lock names: context.sh): the
# library's, shared by every service image's layers, then this service's own; both cached until the lock changes.
COPY var/docker/context/requirements/core.txt var/docker/context/requirements/build.txt /tmp/requirements/
RUN --mount=type=bind,source=var/docker/context/wheelhouse,target=/wheelhouse \
    python3 -m venv /opt/cbt \
 && /opt/cbt/bin/pip install --no-deps --require-hashes -r /tmp/requirements/core.txt \
 && python3 -m venv /opt/build \
 && /opt/build/bin/pip install --no-deps --require-hashes -r /tmp/requirements/build.txt
COPY var/docker/context/requirements/bounds-cache.txt /tmp/requirements/service.txt
RUN --mount=type=bind,source=var/docker/context/wheelhouse,target=/wheelhouse \
    /opt/cbt/bin/pip install --no-deps --require-hashes -r /tmp/requirements/service.txt
# Then the wheels of the library and this service, built here from their sources. Everything is compiled to bytecode
# here (pip does at install; compileall catches what it skipped): the image runs as a user who cannot write it, with
# PYTHONDONTWRITEBYTECODE, so a module without bytecode would be compiled again at every start.
COPY shared /src/shared
COPY services/bounds-cache /src/services/bounds-cache
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation -w /wheels /src/shared /src/services/bounds-cache \
 && /opt/cbt/bin/pip install --no-deps /wheels/*.whl \
 && /opt/cbt/bin/pip check \
 && /opt/cbt/bin/python -m compileall -q /opt/cbt/lib \
 && /opt/cbt/bin/pip uninstall -y -q pip setuptools

FROM ${PYTHON_BASE}
RUN groupadd --gid 10001 cbt \
 && useradd --uid 10001 --gid cbt --home-dir /app --no-create-home --shell /usr/sbin/nologin cbt
COPY --from=builder /opt/cbt /opt/cbt
# Mount config.yaml and models/ here (read-only is fine): model paths and exec commands are relative to it.
WORKDIR /app
ENV PATH=/opt/cbt/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 CBT_CONFIG=/app/config.yaml
USER 10001:10001
EXPOSE 8081 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8081/readyz', timeout=4)"]
ENTRYPOINT ["cbt-bounds-cache"]
CMD ["--health-addr", "0.0.0.0:8081", "--metrics-addr", "0.0.0.0:9464"]

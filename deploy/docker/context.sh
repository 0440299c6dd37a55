#!/usr/bin/env bash
# Fetches on this machine (through the package clients, never inside a build) what the images need, into
# var/docker/context/, so every image builds with no network at all:
#   constraints.txt          every pinned version of uv.lock (uv export), as tests/packaging installs services
#   requirements/core.txt    the exact third-party closure of shared/ (cbt-core) under those constraints
#   requirements/<svc>.txt   the same for shared/ + services/<svc> (no annotations: equal closures, equal files,
#                            so services with the same dependencies share their image layers)
#   requirements/build.txt   the wheel build backend (hatchling) the builder stages use
#   wheelhouse/              a wheel for every line of those files, each download checked against the hashes uv.lock
#                            records (deploy/docker/build-requirements.txt's for the build backend); a package the
#                            lock has as a source archive only is built into a wheel here from the checked archive
# Every requirements file carries the sha256 of its wheels, and the images install them with pip --require-hashes
# (requirement_hashes.py), so an image gets exactly the files checked against the lock.
#   kafka-libs/              the Kafka broker jars (deploy/local/kafka-pom.xml, as the local launcher)
#   spark/{bin,sbin,jars}    Spark itself, from the pip pyspark the workspace pins
#   delta-jars/              Delta Lake (deploy/docker/spark/delta-pom.xml)
# Reruns only refetch what is missing. Usage: deploy/docker/context.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CTX=$ROOT/var/docker/context
UV=${UV:-$ROOT/var/tools/uv-0.13.9/bin/uv}
PIP=${PIP:-$ROOT/var/tools/uv-0.13.9/bin/pip}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
SERVICES=(coordinator worker bounds-cache invalidator api)
HATCHLING=$(grep -ohE 'hatchling==[0-9.]+' shared/pyproject.toml | head -n1)
mkdir -p "$CTX/requirements" "$CTX/wheelhouse"

# The Python part is redone only when the lock or a distribution's metadata changed (a stamp of their hashes).
stamp=$(cat uv.lock shared/pyproject.toml services/*/pyproject.toml deploy/docker/context.sh \
          deploy/docker/build-requirements.txt deploy/docker/requirement_hashes.py | sha256sum | cut -c1-16)
if [ "$(cat "$CTX/python.stamp" 2>/dev/null)" != "$stamp" ]; then
  # Versions only (the compile constraints below); the hashes come from uv.lock further down.
  "$UV" export --quiet --frozen --all-packages --no-dev --no-hashes --no-emit-workspace --no-header \
    -o "$CTX/constraints.txt"

  compile() {  # compile OUT INPUT...: the pinned closure, under uv.lock's versions, for this image's Python
    local out=$1; shift
    printf '%s\n' "$@" | "$UV" pip compile --quiet --no-config --python-version 3.11 --no-header --no-annotate \
      -c "$CTX/constraints.txt" -o "$out" - "${EMIT[@]}"
  }
  for svc in "${SERVICES[@]}"; do
    EMIT=(--no-emit-package cbt-core --no-emit-package "cbt-$svc")
    compile "$CTX/requirements/$svc.txt" "cbt-core @ file://$ROOT/shared" "cbt-$svc @ file://$ROOT/services/$svc"
  done
  EMIT=(--no-emit-package cbt-core)
  compile "$CTX/requirements/core.txt" "cbt-core @ file://$ROOT/shared"
  EMIT=()
  compile "$CTX/requirements/build.txt" "$HATCHLING"

  # One wheel per pinned line, each download checked against uv.lock's hashes (pip's cache makes a rerun cheap;
  # sdists are built into wheels here, after their own check), then every file pinned to its wheels' hashes.
  "$PYTHON" deploy/docker/requirement_hashes.py locked "$CTX/wheelhouse.txt" "$CTX"/requirements/*.txt \
    --lock uv.lock --extra deploy/docker/build-requirements.txt
  rm -rf "$CTX/wheelhouse" && mkdir -p "$CTX/wheelhouse"
  "$PIP" wheel --quiet --disable-pip-version-check --no-deps --require-hashes -w "$CTX/wheelhouse" \
    -r "$CTX/wheelhouse.txt"
  "$PYTHON" deploy/docker/requirement_hashes.py pin "$CTX/wheelhouse" "$CTX"/requirements/*.txt
  echo "$stamp" >"$CTX/python.stamp"
fi

mvn_copy() {  # mvn_copy POM OUT
  compgen -G "$2/*.jar" >/dev/null && return
  command -v mvn >/dev/null || { echo "Maven (mvn) fetches the jars: apt-get install maven" >&2; exit 1; }
  mvn -q -B -Dstyle.color=never -f "$1" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$2"
}
mvn_copy "$ROOT/deploy/local/kafka-pom.xml" "$CTX/kafka-libs"
mvn_copy "$ROOT/deploy/docker/spark/delta-pom.xml" "$CTX/delta-jars"

pyspark=$("$ROOT/.venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
if [ ! -d "$CTX/spark/jars" ] || [ "$(cat "$CTX/spark/SOURCE" 2>/dev/null)" != "$pyspark" ]; then
  rm -rf "$CTX/spark" && mkdir -p "$CTX/spark"
  cp -al "$pyspark/jars" "$pyspark/bin" "$pyspark/sbin" "$CTX/spark/" 2>/dev/null ||
    cp -a "$pyspark/jars" "$pyspark/bin" "$pyspark/sbin" "$CTX/spark/"
  find "$CTX/spark/bin" "$CTX/spark/sbin" -name '*.cmd' -delete
  echo "$pyspark" >"$CTX/spark/SOURCE"
fi
echo "context ready: $(du -sh "$CTX" | cut -f1) in var/docker/context"

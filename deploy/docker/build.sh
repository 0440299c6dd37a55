#!/usr/bin/env bash
# Builds every image of the project (`make images`), tagged with the project's version:
#   cbt/coordinator cbt/worker cbt/bounds-cache cbt/invalidator cbt/api   one service each, from its distribution
#   cbt/spark cbt/kafka cbt/redis                                          Spark (cluster + Connect), Kafka, Redis
# Usage: deploy/docker/build.sh [IMAGE ...]          (names without cbt/, default all)
#   CBT_IMAGE_BASES=local     (default) base images made here from Debian's packages (bases.sh): no registry needed
#   CBT_IMAGE_BASES=official  the registry's images (python:3.11-slim-bookworm, eclipse-temurin:17-jre,
#                             debian:bookworm-slim), each pinned by digest in deploy/docker/official-bases.txt: the
#                             build refuses to start while one is not (official-bases.sh)
# Everything the builds need is fetched first on this machine (context.sh), so no build reaches the network except
# apt in the redis image and the local bases; the Python packages are installed with the hashes of uv.lock's files. Prints each image's size and the build times; the sizes also go to
# var/reports/image-sizes.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
DOCKER=${DOCKER:-/usr/bin/docker}   # Debian's 20.10 client builds with BuildKit without a buildx plugin
export DOCKER_BUILDKIT=1
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' shared/pyproject.toml)
ALL=(coordinator worker bounds-cache invalidator api spark kafka redis)
IMAGES=("$@")
[ ${#IMAGES[@]} -gt 0 ] || IMAGES=("${ALL[@]}")
started=$(date +%s)

case "${CBT_IMAGE_BASES:-local}" in
  local)
    read -r debian python jre < <(bash deploy/docker/bases.sh | tail -n1)
    BASE_ARGS=(--build-arg "DEBIAN_BASE=$debian" --build-arg "PYTHON_BASE=$python" --build-arg "JRE_BASE=$jre")
    ;;
  official) mapfile -t BASE_ARGS < <(bash deploy/docker/official-bases.sh) && [ ${#BASE_ARGS[@]} -gt 0 ] || exit 2 ;;
  *) echo "CBT_IMAGE_BASES must be local or official" >&2; exit 2 ;;
esac
bases_done=$(date +%s)
bash deploy/docker/context.sh
context_done=$(date +%s)

mkdir -p var/docker/logs var/reports
for name in "${IMAGES[@]}"; do
  [ -f "deploy/docker/$name.Dockerfile" ] || { echo "no deploy/docker/$name.Dockerfile" >&2; exit 2; }
  t0=$(date +%s)
  if ! "$DOCKER" build --progress=plain "${BASE_ARGS[@]}" -t "cbt/$name:$VERSION" \
       -f "deploy/docker/$name.Dockerfile" . >"var/docker/logs/$name.log" 2>&1; then
    tail -40 "var/docker/logs/$name.log" >&2
    echo "building cbt/$name failed (log: var/docker/logs/$name.log)" >&2
    exit 1
  fi
  echo "cbt/$name:$VERSION built in $(( $(date +%s) - t0 ))s"
done

"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep -E "^cbt/[a-z-]+:$VERSION" | sort
"$DOCKER" image ls --format '{{.Repository}} {{.Tag}} {{.Size}}' |
  awk -v v="$VERSION" '$1 ~ /^cbt\// && $2 == v {printf "%s\"%s\": \"%s\"", sep, $1, $3; sep=", "} \
                       BEGIN {printf "{"} END {print "}"}' >var/reports/image-sizes.json
echo "bases $(( bases_done - started ))s, context $(( context_done - bases_done ))s," \
     "images $(( $(date +%s) - context_done ))s, total $(( $(date +%s) - started ))s"

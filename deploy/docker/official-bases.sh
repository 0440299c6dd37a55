#!/usr/bin/env bash
# The --build-arg options of CBT_IMAGE_BASES=official (deploy/docker/build.sh), one per line, from
# deploy/docker/official-bases.txt (or the file CBT_OFFICIAL_BASES names): NAME=image, each pinned by digest.
# A line without a digest, or a Dockerfile base argument the file does not give, fails with the file and line.
# Usage: deploy/docker/official-bases.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
FILE=${CBT_OFFICIAL_BASES:-deploy/docker/official-bases.txt}
PINNED='^[a-z0-9]([a-z0-9._/:-]*[a-z0-9])?@sha256:[0-9a-f]{64}$'
[ -f "$FILE" ] || { echo "$FILE: no such file (the official base images, pinned by digest)" >&2; exit 2; }

problems=() args=() given=()
number=0
while IFS= read -r line || [ -n "$line" ]; do
  number=$((number + 1))
  case "$line" in '' | '#'*) continue ;; esac
  name=${line%%=*} image=${line#*=}
  if [[ ! $line =~ ^[A-Z_]+=.+$ ]]; then
    problems+=("$FILE:$number: expected NAME=image@sha256:<digest>, got '$line'")
  elif [[ ! $image =~ $PINNED ]]; then
    problems+=("$FILE:$number: $name: $image is not pinned by digest (expected $image@sha256:<64 hex>; docker pull $image, then docker image inspect --format '{{index .RepoDigests 0}}' $image)")
  else
    args+=("--build-arg" "$name=$image") given+=("$name")
  fi
done <"$FILE"

# Every base argument a Dockerfile's FROM uses must be given (else the build would fall back to its unpinned default).
for name in $(grep -ohE '^FROM \$\{[A-Z_]+\}' deploy/docker/*.Dockerfile | sed -E 's/^FROM \$\{([A-Z_]+)\}/\1/' | sort -u); do
  printf '%s\n' "${given[@]}" "${problems[@]}" | grep -qE "^$name$|: $name: " ||
    problems+=("$FILE: $name: missing (a base of $(grep -lE "^FROM \\\$\\{$name\\}" deploy/docker/*.Dockerfile | xargs -n1 basename | paste -sd, -))")
done

if [ ${#problems[@]} -gt 0 ]; then
  printf '%s\n' "${problems[@]}" >&2
  echo "CBT_IMAGE_BASES=official builds only on base images pinned by digest; CBT_IMAGE_BASES=local needs no registry" >&2
  exit 2
fi
printf '%s\n' "${args[@]}"

#!/usr/bin/env bash
# Local base images for machines without a container registry, made from Debian's packages only:
#   cbt-base/debian:bookworm      debootstrap --variant=minbase from this machine's Debian mirror, then docker import
#   cbt-base/python:3.11-bookworm Debian's python3.11 + venv   (stands in for python:3.11-slim-bookworm)
#   cbt-base/jre:17-bookworm      Debian's openjdk-17-jre-headless (stands in for eclipse-temurin:17-jre)
# Each is built once: an image already present is kept (the engine's store outlives var/). The rootfs tarball is
# cached under var/docker/bases/ as well, so a wiped engine re-imports it instead of bootstrapping again.
# Usage: deploy/docker/bases.sh            (prints the three image names when done)
set -euo pipefail
cd "$(dirname "$0")/../.."

DOCKER=${DOCKER:-/usr/bin/docker}
CACHE=var/docker/bases
DEBIAN_IMAGE=cbt-base/debian:bookworm
PYTHON_IMAGE=cbt-base/python:3.11-bookworm
JRE_IMAGE=cbt-base/jre:17-bookworm

has_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

# The Debian mirror apt already uses here (deb822 "URIs:" or one-line "deb" form), else Debian's own.
debian_mirror() {
  local found
  found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
          grep -oE '(https?://[^ ]+/debian)/?( |$)' | grep -v -- '-security' | head -n1 | tr -d ' ' || true)
  echo "${found:-http://deb.debian.org/debian}"
}

bootstrap_rootfs() {
  local mirror rootfs=$CACHE/rootfs
  mirror=$(debian_mirror)
  command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }
  rm -rf "$rootfs" && mkdir -p "$CACHE"
  echo "debootstrap bookworm from $mirror (about a minute)"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  # The same suites as the official image (security updates included), no downloaded .debs or lists kept.
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror}-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
  tar -C "$rootfs" --numeric-owner -czf "$CACHE/rootfs.tar.gz" .
  rm -rf "$rootfs"
}

if ! has_image "$DEBIAN_IMAGE"; then
  [ -f "$CACHE/rootfs.tar.gz" ] || bootstrap_rootfs
  "$DOCKER" import --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' "$CACHE/rootfs.tar.gz" "$DEBIAN_IMAGE" >/dev/null
fi
for pair in "$PYTHON_IMAGE python" "$JRE_IMAGE jre"; do
  read -r image recipe <<<"$pair"
  has_image "$image" && continue
  DOCKER_BUILDKIT=1 "$DOCKER" build -q -t "$image" --build-arg "DEBIAN_BASE=$DEBIAN_IMAGE" \
    -f "deploy/docker/base/$recipe.Dockerfile" deploy/docker/base >/dev/null
done
echo "$DEBIAN_IMAGE $PYTHON_IMAGE $JRE_IMAGE"

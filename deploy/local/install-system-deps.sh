#!/usr/bin/env bash
# Installs what the local stack needs from Debian's packages when it is missing:
# Java 17 (Kafka broker, Spark Connect server), Maven (resolves the Kafka jars), redis-server,
# Chromium (the web UI's browser tests drive it with Playwright; Playwright's own browser download is not used),
# kcat, formerly kafkacat (a plain Kafka client: the e2e test publishes an invalidation with it, as another system would).
set -euo pipefail

missing=()
command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium >/dev/null || missing+=(chromium)
command -v kcat >/dev/null || command -v kafkacat >/dev/null || missing+=(kcat)
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo -n"; fi
echo "installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null

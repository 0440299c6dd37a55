#!/usr/bin/env bash
# The Docker engine for CI and machines without systemd: installs Debian's docker.io, docker-compose and debootstrap
# when missing, and starts dockerd in the background (pid and log under var/docker/) unless an engine already
# answers. `stop` stops only an engine this script started.
# Usage: deploy/docker/engine.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/../.."
DOCKER=/usr/bin/docker
PID_FILE=var/docker/dockerd.pid
LOG=var/docker/dockerd.log

answers() { "$DOCKER" info >/dev/null 2>&1; }

install() {
  local missing=()
  [ -x "$DOCKER" ] && command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  echo "installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

case "${1:-status}" in
  start)
    install
    if answers; then echo "docker engine already running"; exit 0; fi
    mkdir -p var/docker
    nohup dockerd >"$LOG" 2>&1 &
    echo $! >"$PID_FILE"
    for _ in $(seq 60); do answers && { echo "docker engine started (pid $(cat "$PID_FILE"), log $LOG)"; exit 0; }; sleep 1; done
    tail -20 "$LOG" >&2; echo "dockerd did not answer within 60 s" >&2; exit 1
    ;;
  stop)
    [ -f "$PID_FILE" ] || { echo "no engine started here"; exit 0; }
    pid=$(cat "$PID_FILE")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    fi
    rm -f "$PID_FILE"
    echo "docker engine stopped"
    ;;
  status)
    if answers; then echo "docker engine running"; else echo "docker engine not running"; exit 3; fi
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac

#!/bin/sh
# cbt/redis: redis-server whose users are written at every start to an ACL file in /tmp (writable under a read-only
# root file system), holding each password's SHA-256 only; the default user is off, so a client without credentials
# is refused.
#
# - `cbt` (REDIS_PASSWORD, required): the operators' tools and the healthcheck.
# - `cbt-<service>` (REDIS_PASSWORD_<SERVICE> for each of COORDINATOR, WORKER, BOUNDS_CACHE, INVALIDATOR and API: all
#   five, or none): one user per service, so each service's credentials are its own.
# No user may run a command of the @admin or @dangerous categories (FLUSHALL, FLUSHDB, KEYS, CONFIG, DEBUG,
# SHUTDOWN, MONITOR, ACL...), INFO aside. Every password is at least 16 characters. The passwords leave the
# environment before redis-server starts (nothing of them in /proc/<pid>/environ).
# `cbt-redis health` (the healthcheck) pings as cbt; any other arguments are passed to redis-server.
set -eu
if [ "${1:-}" = health ]; then
  [ "$(REDISCLI_AUTH="${REDIS_PASSWORD:-}" redis-cli --user cbt --no-auth-warning ping 2>/dev/null)" = PONG ]
  exit
fi
fail() { echo "cbt/redis: $*" >&2; exit 64; }
check_password() {  # name value
  case "$2" in
    *[!A-Za-z0-9._~+/=-]*) fail "$1 may hold letters, digits and . _ ~ + / = - only" ;;
  esac
  [ ${#2} -ge 16 ] || fail "$1 has ${#2} characters: use at least 16 (e.g. openssl rand -hex 24)"
}
sha256() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
RULES='~* &* +@all -@admin -@dangerous +info'

[ -n "${REDIS_PASSWORD:-}" ] || fail "set REDIS_PASSWORD, the password of the user cbt (e.g. openssl rand -hex 24)"
check_password REDIS_PASSWORD "$REDIS_PASSWORD"
umask 077
acl=/tmp/cbt-users.acl
printf 'user default off\nuser cbt on #%s %s\n' "$(sha256 "$REDIS_PASSWORD")" "$RULES" >"$acl"
unset REDIS_PASSWORD
given=0
for service in COORDINATOR WORKER BOUNDS_CACHE INVALIDATOR API; do
  eval "password=\${REDIS_PASSWORD_$service:-}"
  unset "REDIS_PASSWORD_$service"
  [ -n "$password" ] || continue
  check_password "REDIS_PASSWORD_$service" "$password"
  user=cbt-$(echo "$service" | tr 'A-Z_' 'a-z-')
  printf 'user %s on #%s %s\n' "$user" "$(sha256 "$password")" "$RULES" >>"$acl"
  given=$((given + 1))
done
password=""
[ "$given" -eq 0 ] || [ "$given" -eq 5 ] ||
  fail "set REDIS_PASSWORD_<SERVICE> for all of COORDINATOR WORKER BOUNDS_CACHE INVALIDATOR API, or for none"
exec redis-server /etc/redis/cbt.conf --aclfile "$acl" "$@"

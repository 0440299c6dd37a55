#!/bin/sh
# cbt/redis: redis-server with one user, `cbt`, whose password is REDIS_PASSWORD (required: the image refuses to
# start without one); the default user is off, so a client without credentials is refused. The ACL file is written
# at every start to /tmp (writable under a read-only root file system). `cbt-redis health` (the healthcheck) pings
# as that user; any other arguments are passed to redis-server.
set -eu
if [ "${1:-}" = health ]; then
  [ "$(REDISCLI_AUTH="${REDIS_PASSWORD:-}" redis-cli --user cbt --no-auth-warning ping 2>/dev/null)" = PONG ]
  exit
fi
if [ -z "${REDIS_PASSWORD:-}" ]; then
  echo "cbt/redis: set REDIS_PASSWORD, the password of the user cbt (e.g. openssl rand -hex 24)" >&2
  exit 64
fi
case "$REDIS_PASSWORD" in
  *[!A-Za-z0-9._~+/=-]*) echo "cbt/redis: REDIS_PASSWORD may hold letters, digits and . _ ~ + / = - only" >&2; exit 64 ;;
esac
umask 077
printf 'user default off\nuser cbt on >%s ~* &* +@all -@admin\n' "$REDIS_PASSWORD" >/tmp/cbt-users.acl
exec redis-server /etc/redis/cbt.conf --aclfile /tmp/cbt-users.acl "$@"

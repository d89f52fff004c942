#!/usr/bin/env bash
# Entrypoint of the PostgreSQL test image built by `make test-image`
# (tools/pgimage/build.sh). It behaves as the official postgres
# image as far as the testcontainers-go postgres module relies on it:
#
#   - POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required unless
#     POSTGRES_HOST_AUTH_METHOD=trust) and POSTGRES_DB (default: the user)
#     are honoured on the first start, when $PGDATA holds no cluster yet;
#   - the first start runs a temporary server on the Unix socket only, to
#     create the database and run /docker-entrypoint-initdb.d/*.sh|*.sql, stops
#     it, then starts the real server: "database system is ready to accept
#     connections" is logged twice, which is what the module's
#     BasicWaitStrategies wait for, and the port only answers for the second;
#   - the server listens on 0.0.0.0:5432 and takes the arguments it is given
#     (the module runs `postgres -c fsync=off`); arguments starting with "-"
#     are passed to postgres; any other command is run as is.
#
# Run as root (the default) it prepares the directories and re-executes itself
# as the postgres user; postgres itself refuses to run as root.
set -Eeuo pipefail

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

log() {
	printf 'docker-entrypoint: %s\n' "$*"
}

if [ "${1:0:1}" = '-' ]; then
	set -- postgres "$@"
fi
if [ "${1:-}" != postgres ]; then
	exec "$@"
fi

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	chmod 2775 /var/run/postgresql
	exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

POSTGRES_USER=${POSTGRES_USER:-postgres}
POSTGRES_DB=${POSTGRES_DB:-$POSTGRES_USER}
POSTGRES_PASSWORD=${POSTGRES_PASSWORD:-}
POSTGRES_HOST_AUTH_METHOD=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

init_cluster() {
	if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
		log 'error: the database is uninitialised and POSTGRES_PASSWORD is empty;' \
			'set it (or POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one)' >&2
		exit 1
	fi
	log "initialising $PGDATA for user $POSTGRES_USER"
	local pwfile
	pwfile="$(mktemp)"
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	local pwopt=("--pwfile=$pwfile")
	if [ -z "$POSTGRES_PASSWORD" ]; then
		pwopt=()
	fi
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of words
	initdb --username="$POSTGRES_USER" "${pwopt[@]}" --encoding=UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host="$POSTGRES_HOST_AUTH_METHOD" --no-sync ${POSTGRES_INITDB_ARGS:-}
	rm -f "$pwfile"
	printf '\n# docker-entrypoint: connections from outside the container\nhost all all all %s\n' \
		"$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"
	printf "\n# docker-entrypoint\nlisten_addresses = '0.0.0.0'\n" >>"$PGDATA/postgresql.conf"

	# A temporary server reachable only through the Unix socket, so that nothing
	# connects over TCP before the database exists.
	pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c fsync=off -p 5432" -w start
	local psql=(psql -v ON_ERROR_STOP=1 --no-psqlrc -q --username "$POSTGRES_USER")
	if [ "$POSTGRES_DB" != postgres ]; then
		log "creating database $POSTGRES_DB"
		"${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
	fi
	local f
	shopt -s nullglob
	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
		*.sh)
			log "running $f"
			if [ -x "$f" ]; then
				"$f"
			else
				# shellcheck disable=SC1090
				. "$f"
			fi
			;;
		*.sql)
			log "running $f"
			"${psql[@]}" --dbname "$POSTGRES_DB" -f "$f"
			;;
		*) log "ignoring $f" ;;
		esac
	done
	pg_ctl -D "$PGDATA" -m fast -w stop
	log 'initialisation complete; starting the server'
}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	init_cluster
fi
exec "$@"

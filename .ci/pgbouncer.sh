#!/usr/bin/env bash
# PgBouncer in transaction mode in front of the machine's PostgreSQL
# (127.0.0.1:5432), for the pooler lane (docs/postgres.md "Behind
# PgBouncer"). Its own config, files and port; the server's config is
# never touched.
#
#   .ci/pgbouncer.sh start   install (apt) if missing, start; prints the
#                            DSN of PgBouncer's "postgres" database
#   .ci/pgbouncer.sh stop    stop it and remove its files
#   .ci/pgbouncer.sh dsn     print that DSN
#
# Port: 127.0.0.1:6441. Every database name is passed through to the
# server (a wildcard entry), so a test's own database is reachable as soon
# as it exists. Files live under $SYNCSTORE_PGBOUNCER_DIR (default
# /tmp/syncstore-pgbouncer); PgBouncer refuses to run as root, so it runs
# as the postgres user.
set -euo pipefail

base="${SYNCSTORE_PGBOUNCER_DIR:-/tmp/syncstore-pgbouncer}"
port=6441
server_host=127.0.0.1
server_port=5432

say() { printf 'pgbouncer: %s\n' "$*" >&2; }

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

dsn() { echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"; }

ready() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

cmd_start() {
	if ! command -v pgbouncer >/dev/null; then
		say "installing pgbouncer (apt)"
		local sudo=""
		[ "$(id -u)" = 0 ] || sudo=sudo
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
	fi
	install -d -o postgres -g postgres -m 0700 "$base"
	# pool_mode = transaction: a server connection is a client's only for
	# one transaction. The store's pool must then prepare no named
	# statements (PgBouncer 1.18 cannot keep them: QueryExecModeExec) and
	# SubscribeCommits must LISTEN on a direct connection (ListenerDSN).
	# default_pool_size = 10 per database, above the tests' pool size (8),
	# so a case's transactions never queue inside PgBouncer and a lost
	# answer's settling always finds a server connection.
	cat >"$base/pgbouncer.ini" <<EOF2
[databases]
* = host=$server_host port=$server_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $base/userlist.txt
pool_mode = transaction
default_pool_size = 10
max_client_conn = 1000
server_reset_query =
server_idle_timeout = 10
autodb_idle_timeout = 60
logfile = $base/pgbouncer.log
pidfile = $base/pgbouncer.pid
admin_users = postgres
EOF2
	echo '"postgres" ""' >"$base/userlist.txt"
	chown postgres:postgres "$base/pgbouncer.ini" "$base/userlist.txt"
	if ! ready; then
		as_pg pgbouncer -d "$base/pgbouncer.ini"
	fi
	for _ in $(seq 1 100); do
		if ready; then
			say "transaction mode on 127.0.0.1:$port, in front of $server_host:$server_port"
			dsn
			return 0
		fi
		sleep 0.1
	done
	say "nothing answers on port $port; log:"
	tail -30 "$base/pgbouncer.log" >&2 || true
	return 1
}

cmd_stop() {
	if [ -f "$base/pgbouncer.pid" ]; then
		kill "$(cat "$base/pgbouncer.pid")" 2>/dev/null || true
		for _ in $(seq 1 50); do
			ready || break
			sleep 0.1
		done
	fi
	rm -rf "$base"
	say "stopped"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
dsn) dsn ;;
*)
	echo "usage: $0 start|stop|dsn" >&2
	exit 2
	;;
esac

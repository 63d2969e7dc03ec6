#!/usr/bin/env bash
# A PostgreSQL of its own on loopback for the authoritative-query
# run-time proof (AQ-6): statements that make the planner copy
# expressions without checking for interrupts run here, never on the
# machine's shared server (such a backend ignores cancel and terminate,
# and unbounded it grows until the kernel kills it and the postmaster
# restarts every backend).
#
#   .ci/postgres-aq.sh start   create and start it; prints its DSN
#   .ci/postgres-aq.sh stop    stop it (immediate shutdown, then SIGKILL)
#                              and remove its files
#
# Port 127.0.0.1:7485. Files under $SYNCSTORE_PGAQ_DIR (default
# /tmp/syncstore-pgaq), owned by the postgres user. Every backend runs
# under a 4 GB address-space limit (ulimit -v on the postmaster): a
# runaway fails with "out of memory" instead of taking the machine.
# Then:
#
#   SYNCSTORE_TEST_POSTGRES_AQ="$(.ci/postgres-aq.sh start)" \
#     go test -run TestAQPlannerEndsOnOwnServer ./drivers/postgres
set -euo pipefail

dir="${SYNCSTORE_PGAQ_DIR:-/tmp/syncstore-pgaq}"
bin=/usr/lib/postgresql/15/bin
port=7485

say() { printf 'postgres-aq: %s\n' "$*" >&2; }
as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

cmd_start() {
	install -d -o postgres -g postgres -m 0700 "$dir"
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; return 1; }
		cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 20
shared_buffers = 32MB
fsync = off
synchronous_commit = off
full_page_writes = off
autovacuum = off
CONF
	fi
	if ! "$bin/pg_isready" -q -h 127.0.0.1 -p $port; then
		as_pg bash -c "ulimit -v 4194304 && exec '$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 30 start" >/dev/null ||
			{ tail -30 "$dir/server.log" >&2; return 1; }
	fi
	echo "postgres://postgres@127.0.0.1:$port/postgres"
}

cmd_stop() {
	local pid
	if pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
		# A backend stuck in the planner does not end on a fast shutdown;
		# an immediate one (SIGQUIT) ends it; else SIGKILL the postmaster's
		# children and the postmaster.
		if ! as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 10 stop >/dev/null 2>&1; then
			say "immediate shutdown did not end in 10 s; killing $pid and its backends"
			pkill -KILL -P "$pid" 2>/dev/null || true
			kill -KILL "$pid" 2>/dev/null || true
			sleep 1
		fi
	fi
	rm -rf "$dir"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
*) say "usage: $0 start|stop"; exit 2 ;;
esac

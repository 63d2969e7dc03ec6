#!/usr/bin/env bash
# A PostgreSQL 15 primary and a hot standby fed by streaming replication,
# on loopback, for the read-replica lane (docs/scaling.md). Both are
# clusters of their own (initdb, then pg_basebackup -R), so the machine's
# main cluster on 5432 is never touched.
#
#   .ci/pg-replica.sh start   create (first time) and start both; prints
#                             "PRIMARY_DSN STANDBY_DSN" on stdout
#   .ci/pg-replica.sh stop    stop both and remove their files
#   .ci/pg-replica.sh dsns    print the two DSNs
#
# Ports: primary 127.0.0.1:5441, standby 127.0.0.1:5442. Files live under
# $SYNCSTORE_PGREPLICA_DIR (default /tmp/syncstore-pgreplica), owned by the
# postgres user (initdb refuses to run as root).
set -euo pipefail

base="${SYNCSTORE_PGREPLICA_DIR:-/tmp/syncstore-pgreplica}"
bin=/usr/lib/postgresql/15/bin
primary_port=5441
standby_port=5442

say() { printf 'pg-replica: %s\n' "$*" >&2; }

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

dsn() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }

dsns() { echo "$(dsn $primary_port) $(dsn $standby_port)"; }

ready() { "$bin/pg_isready" -q -h 127.0.0.1 -p "$1"; }

wait_ready() {
	for _ in $(seq 1 120); do
		ready "$1" && return 0
		sleep 0.5
	done
	say "nothing answers on port $1; log:"
	tail -30 "$base/$2.log" >&2 || true
	return 1
}

cmd_start() {
	install -d -o postgres -g postgres -m 0700 "$base"
	if [ ! -f "$base/primary/PG_VERSION" ]; then
		as_pg "$bin/initdb" -D "$base/primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$base/initdb.log" 2>&1 ||
			{ cat "$base/initdb.log" >&2; return 1; }
		cat >>"$base/primary/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $primary_port
unix_socket_directories = '$base'
wal_level = replica
max_wal_senders = 5
wal_keep_size = 256MB
hot_standby_feedback = on
fsync = on
EOF
		echo "host replication all 127.0.0.1/32 trust" >>"$base/primary/pg_hba.conf"
	fi
	if ! ready $primary_port; then
		as_pg "$bin/pg_ctl" -D "$base/primary" -l "$base/primary.log" -w start >/dev/null
	fi
	wait_ready $primary_port primary
	if [ ! -f "$base/standby/PG_VERSION" ]; then
		as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p $primary_port -U postgres -D "$base/standby" -R -X stream -c fast >/dev/null
		cat >>"$base/standby/postgresql.conf" <<EOF
port = $standby_port
hot_standby = on
EOF
	fi
	if ! ready $standby_port; then
		as_pg "$bin/pg_ctl" -D "$base/standby" -l "$base/standby.log" -w start >/dev/null
	fi
	wait_ready $standby_port standby
	for _ in $(seq 1 120); do
		if [ "$(psql -h 127.0.0.1 -p $primary_port -U postgres -Atc "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 1 ]; then
			say "primary on $primary_port, hot standby on $standby_port, streaming"
			dsns
			return 0
		fi
		sleep 0.5
	done
	say "the standby is not streaming; log:"
	tail -30 "$base/standby.log" >&2
	return 1
}

cmd_stop() {
	for node in standby primary; do
		if [ -f "$base/$node/postmaster.pid" ]; then
			as_pg "$bin/pg_ctl" -D "$base/$node" -m fast -w stop >/dev/null 2>&1 || true
		fi
	done
	rm -rf "$base"
	say "stopped"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
dsns) dsns ;;
*)
	echo "usage: $0 start|stop|dsns" >&2
	exit 2
	;;
esac

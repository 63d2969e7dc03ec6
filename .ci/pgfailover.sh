#!/usr/bin/env bash
# A PostgreSQL 15 primary and a standby under pg_auto_failover (a monitor
# and two keeper-managed nodes) on loopback, for the failover lane
# (docs/scaling.md). The monitor promotes the standby when the primary
# dies; its health checks are tightened (every 1 s, 2 s timeout, 3 s
# demote wait) so a failover takes seconds, not the default ~40 s.
#
#   .ci/pgfailover.sh start         create (first time) and start the monitor
#                                   and both nodes, wait for primary +
#                                   secondary; prints the multi-host DSN
#   .ci/pgfailover.sh mode sync|async  the standby in the write quorum
#                                   (synchronous_standby_names names it;
#                                   a commit waits for its flush) or not
#                                   (asynchronous streaming); waits until
#                                   the primary applies it
#   .ci/pgfailover.sh stall-replication  SIGSTOP the primary's walsenders:
#                                   no more WAL reaches the standby (as
#                                   when it lags); kill-primary ends them
#   .ci/pgfailover.sh kill-primary  SIGKILL the primary's keeper, postmaster
#                                   and backends; prints the node (1 or 2)
#   .ci/pgfailover.sh heal          start any killed node again (it rejoins
#                                   as the standby, pg_rewind if needed) and
#                                   wait for primary + secondary
#   .ci/pgfailover.sh state         pg_autoctl show state
#   .ci/pgfailover.sh dsn           print the multi-host DSN
#   .ci/pgfailover.sh stop          stop everything, remove the files
#
# Ports: monitor 127.0.0.1:5461, nodes 5462 and 5463. Files (data dirs,
# pg_autoctl's config and state: XDG_* point there) live under
# $SYNCSTORE_PGFAILOVER_DIR (default /tmp/syncstore-pgfailover), owned by
# the postgres user (pg_autoctl and initdb refuse root). Needs Debian's
# postgresql-15-auto-failover and pg-auto-failover-cli (installed here
# with apt-get when missing and run as root).
set -euo pipefail

base="${SYNCSTORE_PGFAILOVER_DIR:-/tmp/syncstore-pgfailover}"
bin=/usr/lib/postgresql/15/bin
monitor_port=5461
node_ports=(0 5462 5463)
monitor_uri="postgres://autoctl_node@127.0.0.1:$monitor_port/pg_auto_failover?sslmode=disable"

say() { printf 'pgfailover: %s\n' "$*" >&2; }

# as_pg NAME CMD… runs CMD as postgres with pg_autoctl's files under
# $base and SYNCSTORE_PGFAILOVER_PART=$base/NAME in its environment, which
# the processes it starts inherit (keepers, their supervisors, which
# leave the process group, postmasters): lane_pids finds them.
as_pg() {
	local env=(SYNCSTORE_PGFAILOVER_PART="$base/$1" XDG_CONFIG_HOME="$base/xdg/config" XDG_DATA_HOME="$base/xdg/data" XDG_RUNTIME_DIR="$base/xdg/run" PATH="$bin:$PATH")
	shift
	if [ "$(id -un)" = postgres ]; then env "${env[@]}" "$@"; else runuser -u postgres -- env "${env[@]}" "$@"; fi
}

dsn() {
	echo "postgres://postgres@127.0.0.1:${node_ports[1]},127.0.0.1:${node_ports[2]}/postgres?target_session_attrs=read-write&connect_timeout=2&sslmode=disable"
}

ready() { "$bin/pg_isready" -q -h 127.0.0.1 -p "$1"; }

sqlq() { psql -X -h 127.0.0.1 -p "$1" -U postgres -d "${3:-postgres}" -Atc "$2"; }

ensure_packages() {
	command -v pg_autoctl >/dev/null && [ -f "$bin/../lib/pgautofailover.so" ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing postgresql-15-auto-failover pg-auto-failover-cli"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			postgresql-15-auto-failover pg-auto-failover-cli >"$base/apt.log" 2>&1 ||
			{ cat "$base/apt.log" >&2; return 1; }
	else
		say "pg_autoctl is missing: apt-get install postgresql-15-auto-failover pg-auto-failover-cli"
		return 1
	fi
}

# lane_pids NAME prints the pids of every process of part NAME (monitor,
# node1, node2) of this lane.
lane_pids() {
	grep -lzx "SYNCSTORE_PGFAILOVER_PART=$base/$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}

# kill_part NAME SIGKILLs every process of part NAME: nothing exits
# cleanly, nothing is left to restart the postmaster.
kill_part() {
	local pids pid
	for _ in 1 2 3 4 5; do
		pids="$(lane_pids "$1")"
		[ -n "$pids" ] || break
		# the postmaster's children (backends, walsenders) too: their
		# environment is overwritten by their process titles
		for pid in $pids; do pids="$pids $(pgrep -P "$pid" || true)"; done
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
		sleep 0.1
	done
	rm -f "$base/$1.keeper"
}

# run_keeper NAME starts `pg_autoctl run` for part NAME.
run_keeper() {
	local name=$1
	as_pg "$name" pg_autoctl run --pgdata "$base/$name" >>"$base/$name.log" 2>&1 </dev/null &
	echo $! >"$base/$name.keeper"
}

keeper_alive() { [ -f "$base/$1.keeper" ] && kill -0 "$(cat "$base/$1.keeper")" 2>/dev/null; }

wait_port() {
	for _ in $(seq 1 240); do
		ready "$1" && return 0
		sleep 0.25
	done
	say "nothing answers on port $1; log:"
	tail -30 "$base/$2.log" >&2 || true
	return 1
}

# states prints "node1state node2state" as the monitor reports them.
states() {
	sqlq $monitor_port "SELECT string_agg(reportedstate::text || '/' || goalstate::text, ' ' ORDER BY nodeid) FROM pgautofailover.node" pg_auto_failover 2>/dev/null || true
}

# wait_healthy waits until one node is primary and the other secondary
# (reported = goal), the standby streaming.
wait_healthy() {
	local s
	for _ in $(seq 1 480); do
		s="$(states)"
		case "$s" in
		"primary/primary secondary/secondary" | "secondary/secondary primary/primary")
			return 0 ;;
		esac
		sleep 0.25
	done
	say "the nodes did not settle as primary + secondary: $s"
	tail -20 "$base/node1.log" "$base/node2.log" >&2 || true
	return 1
}

create_node() {
	local n=$1
	as_pg "node$n" pg_autoctl create postgres --pgdata "$base/node$n" --pgctl "$bin/pg_ctl" \
		--pgport "${node_ports[$n]}" --hostname 127.0.0.1 --listen 127.0.0.1 --name "node$n" \
		--auth trust --no-ssl --monitor "$monitor_uri" >>"$base/node$n.log" 2>&1 ||
		{ tail -30 "$base/node$n.log" >&2; return 1; }
	cat >>"$base/node$n/postgresql.conf" <<EOF
unix_socket_directories = '$base'
fsync = on
max_connections = 200
EOF
}

cmd_start() {
	install -d -o postgres -g postgres -m 0700 "$base" "$base/xdg" "$base/xdg/config" "$base/xdg/data" "$base/xdg/run"
	ensure_packages
	if [ ! -f "$base/monitor/PG_VERSION" ]; then
		as_pg monitor pg_autoctl create monitor --pgdata "$base/monitor" --pgctl "$bin/pg_ctl" \
			--pgport $monitor_port --hostname 127.0.0.1 --listen 127.0.0.1 --auth trust --no-ssl >>"$base/monitor.log" 2>&1 ||
			{ tail -30 "$base/monitor.log" >&2; return 1; }
		cat >>"$base/monitor/postgresql.conf" <<EOF
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 2000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 3000
EOF
	fi
	keeper_alive monitor || run_keeper monitor
	wait_port $monitor_port monitor
	for n in 1 2; do
		if [ ! -f "$base/node$n/PG_VERSION" ]; then
			# node 2 clones node 1 (pg_basebackup), which needs node 1's keeper.
			create_node "$n"
		fi
		keeper_alive "node$n" || run_keeper "node$n"
		wait_port "${node_ports[$n]}" "node$n"
	done
	wait_healthy
	say "monitor on $monitor_port, nodes on ${node_ports[1]} and ${node_ports[2]}: $(states)"
	dsn
}

# primary prints the node (1 or 2) the monitor has as primary.
primary() {
	sqlq $monitor_port "SELECT substr(nodename, 5) FROM pgautofailover.node WHERE goalstate IN ('primary', 'wait_primary', 'single') AND reportedstate IN ('primary', 'wait_primary', 'single')" pg_auto_failover
}

cmd_mode() {
	local quorum
	case "${1:-}" in
	sync) quorum=true ;;
	async) quorum=false ;;
	*) say "mode sync|async"; return 2 ;;
	esac
	wait_healthy
	local p s
	p="$(primary)"
	s=$((3 - p))
	as_pg "node$s" pg_autoctl set node replication-quorum "$quorum" --pgdata "$base/node$s" >>"$base/node$s.log" 2>&1 ||
		{ tail -20 "$base/node$s.log" >&2; return 1; }
	wait_healthy
	# sync_state of an "ANY 1 (…)" standby is quorum
	local want
	[ "$quorum" = true ] && want=quorum || want=async
	for _ in $(seq 1 240); do
		if [ "$(sqlq "${node_ports[$p]}" "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null)" = "$want" ]; then
			say "standby node$s is $want (primary node$p: synchronous_standby_names = '$(sqlq "${node_ports[$p]}" "SHOW synchronous_standby_names")')"
			return 0
		fi
		sleep 0.25
	done
	say "the standby did not become $want"
	return 1
}

cmd_kill_primary() {
	local p
	p="$(primary)"
	[ -n "$p" ] || { say "no primary"; return 1; }
	kill_part "node$p"
	say "killed node$p (port ${node_ports[$p]})"
	echo "$p"
}

cmd_stall() {
	local p pids
	p="$(primary)"
	pids="$(sqlq "${node_ports[$p]}" "SELECT pid FROM pg_stat_replication")"
	[ -n "$pids" ] || { say "node$p has no walsender"; return 1; }
	for pid in $pids; do kill -STOP "$pid"; done
	say "stopped the walsender(s) $pids of node$p"
}

cmd_heal() {
	local pids
	for n in 1 2; do
		# a stall-replication not followed by a kill ends here
		pids="$(sqlq "${node_ports[$n]}" "SELECT pid FROM pg_stat_replication" 2>/dev/null || true)"
		for pid in $pids; do kill -CONT "$pid" 2>/dev/null || true; done
	done
	for n in 1 2; do
		keeper_alive "node$n" || run_keeper "node$n"
	done
	wait_healthy
	say "healed: $(states)"
}

cmd_stop() {
	for part in node1 node2 monitor; do
		# the keeper first, so that nothing restarts the postmaster
		[ -f "$base/$part.keeper" ] && kill -TERM "$(cat "$base/$part.keeper")" 2>/dev/null || true
		if [ -f "$base/$part/postmaster.pid" ]; then
			as_pg "$part" "$bin/pg_ctl" -D "$base/$part" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
		fi
		kill_part "$part"
	done
	rm -rf "$base"
	say "stopped"
}

case "${1:-}" in
start) cmd_start ;;
mode) cmd_mode "${2:-}" ;;
kill-primary) cmd_kill_primary ;;
stall-replication) cmd_stall ;;
heal) cmd_heal ;;
state) as_pg monitor pg_autoctl show state --pgdata "$base/monitor" ;;
dsn) dsn ;;
stop) cmd_stop ;;
*)
	echo "usage: $0 start|mode sync|async|stall-replication|kill-primary|heal|state|dsn|stop" >&2
	exit 2
	;;
esac

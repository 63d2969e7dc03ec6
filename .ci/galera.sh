#!/usr/bin/env bash
# A 3-node MariaDB Galera cluster on loopback, for the multi-primary lane
# (docs/scaling.md). Debian's galera-4 provider and the MariaDB server
# binaries run three mariadbd processes, each with its own datadir made by
# mariadb-install-db --no-defaults, joined by rsync SST.
#
#   .ci/galera.sh start    create (first time) and start the cluster; prints
#                          the three DSNs, comma-separated, on stdout
#   .ci/galera.sh stop     stop every node and remove the cluster's files
#   .ci/galera.sh kill N   SIGKILL node N (1…3)
#   .ci/galera.sh restart N  start node N again (it rejoins by IST/SST)
#   .ci/galera.sh dsns     print the DSNs
#
# Nodes listen on 127.0.0.1:3411…3413 (SQL), 4571…4573 (group
# communication), 4581…4583 (IST), 4591…4593 (SST). Files live under
# $SYNCSTORE_GALERA_DIR (default /tmp/syncstore-galera). Everything runs as
# the mysql user, which must own the datadirs for rsync SST to write them;
# the config files are 0644 (mariadbd ignores a world-writable my.cnf).
set -euo pipefail

base="${SYNCSTORE_GALERA_DIR:-/tmp/syncstore-galera}"
provider=/usr/lib/galera/libgalera_smm.so
nodes=(1 2 3)
gcomm="gcomm://127.0.0.1:4571,127.0.0.1:4572,127.0.0.1:4573"

say() { printf 'galera: %s\n' "$*" >&2; }

sqlport() { echo $((3410 + $1)); }

dsn() { echo "root@tcp(127.0.0.1:$(sqlport "$1"))/"; }

dsns() {
	local out=()
	for n in "${nodes[@]}"; do out+=("$(dsn "$n")"); done
	(IFS=,; echo "${out[*]}")
}

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$(sqlport "$1")") 2>/dev/null; }

client() { mariadb --no-defaults -h127.0.0.1 -P"$(sqlport "$1")" -uroot -N -B -e "$2"; }

# wsrep_status N prints the node's cluster size and state ("3 Synced").
wsrep_status() {
	client "$1" "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='WSREP_CLUSTER_SIZE'),
		(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='WSREP_LOCAL_STATE_COMMENT')" 2>/dev/null | tr '\t' ' '
}

write_config() {
	local n=$1 dir="$base/node$1"
	install -d -o mysql -g mysql -m 0750 "$dir" "$dir/data" "$dir/run" "$dir/tmp"
	cat >"$dir/my.cnf" <<EOF
[mariadbd]
user                     = mysql
datadir                  = $dir/data
# A tmpdir of its own: a mariadbd starting with tmpdir=/tmp deletes every
# #sql* file there, also the temporary tables of another instance's
# mariadb-install-db running at the same time (the lanes start together).
tmpdir                   = $dir/tmp
socket                   = $dir/run/mysqld.sock
pid-file                 = $dir/run/mysqld.pid
log-error                = $dir/error.log
bind-address             = 127.0.0.1
port                     = $(sqlport "$n")
skip-name-resolve
binlog_format            = ROW
default_storage_engine   = InnoDB
innodb_autoinc_lock_mode = 2
innodb_flush_log_at_trx_commit = 2
innodb_buffer_pool_size  = 64M
max_connections          = 300
character-set-server     = utf8mb4
wsrep_on                 = ON
wsrep_provider           = $provider
wsrep_cluster_name       = syncstore
wsrep_cluster_address    = $gcomm
wsrep_node_name          = node$n
wsrep_node_address       = 127.0.0.1:$((4570 + n))
wsrep_provider_options   = "gmcast.listen_addr=tcp://127.0.0.1:$((4570 + n));ist.recv_addr=127.0.0.1:$((4580 + n));gcache.size=64M"
wsrep_sst_method         = rsync
wsrep_sst_receive_address = 127.0.0.1:$((4590 + n))
EOF
	chmod 0644 "$dir/my.cnf"
	chown mysql:mysql "$dir/my.cnf"
}

init_node() {
	local n=$1 dir="$base/node$1"
	write_config "$n"
	if [ ! -d "$dir/data/mysql" ]; then
		mariadb-install-db --no-defaults --user=mysql --datadir="$dir/data" --tmpdir="$dir/tmp" \
			--auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 ||
			{ cat "$dir/install.log" >&2; return 1; }
	fi
}

start_node() {
	local n=$1 dir="$base/node$1"
	shift
	if answers "$n"; then return 0; fi
	# mariadbd reads only this file; --wsrep-new-cluster bootstraps node 1.
	start-stop-daemon --start --background --pidfile "$dir/run/mysqld.pid" \
		--exec /usr/sbin/mariadbd -- --defaults-file="$dir/my.cnf" "$@"
}

wait_synced() {
	local n=$1 want=${2:-}
	for _ in $(seq 1 180); do
		if answers "$n"; then
			local st
			st="$(wsrep_status "$n" || true)"
			if [[ "$st" == *Synced* ]] && { [ -z "$want" ] || [[ "$st" == "$want "* ]]; }; then
				return 0
			fi
		fi
		sleep 0.5
	done
	say "node $n did not reach Synced${want:+ with $want nodes}; its log:"
	tail -40 "$base/node$n/error.log" >&2 || true
	return 1
}

grant_root() {
	# Tests connect as root@127.0.0.1 without a password over TCP.
	client 1 "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" 2>/dev/null ||
		mariadb --no-defaults -S "$base/node1/run/mysqld.sock" -uroot -e \
			"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
			 GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;"
}

cmd_start() {
	for n in "${nodes[@]}"; do init_node "$n"; done
	if ! answers 1; then
		# A cluster stopped cleanly can be bootstrapped from node 1 again.
		sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$base/node1/data/grastate.dat" 2>/dev/null || true
		start_node 1 --wsrep-new-cluster
	fi
	wait_synced 1
	grant_root
	for n in 2 3; do
		start_node "$n"
		wait_synced "$n"
	done
	wait_synced 1 3
	say "3 nodes synced"
	dsns
}

cmd_stop() {
	for n in 3 2 1; do
		local pidf="$base/node$n/run/mysqld.pid"
		if [ -f "$pidf" ]; then
			local pid
			pid="$(cat "$pidf")"
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	pkill -f "defaults-file=$base/" 2>/dev/null || true
	rm -rf "$base"
	say "stopped"
}

cmd_kill() {
	local n=$1 pidf="$base/node$1/run/mysqld.pid"
	[ -f "$pidf" ] && kill -9 "$(cat "$pidf")" 2>/dev/null || true
	rm -f "$pidf"
	for _ in $(seq 1 40); do answers "$n" || return 0; sleep 0.25; done
}

cmd_restart() {
	start_node "$1"
	wait_synced "$1"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
kill) cmd_kill "${2:?node}" ;;
restart) cmd_restart "${2:?node}" ;;
dsns) dsns ;;
*)
	echo "usage: $0 start|stop|kill N|restart N|dsns" >&2
	exit 2
	;;
esac

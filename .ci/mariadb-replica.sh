#!/usr/bin/env bash
# A MariaDB primary and a replica fed by binlog (GTID) replication, on
# loopback, for the read-replica lane (docs/scaling.md). Two servers of
# their own (mariadb-install-db --no-defaults), so the machine's MariaDB on
# 3306 is never touched.
#
#   .ci/mariadb-replica.sh start   create and start both; prints
#                                  "PRIMARY_DSN REPLICA_DSN" on stdout
#   .ci/mariadb-replica.sh stop    stop both and remove their files
#   .ci/mariadb-replica.sh dsns    print the two DSNs
#
# Ports: primary 127.0.0.1:3421, replica 127.0.0.1:3422. Files live under
# $SYNCSTORE_MDBREPLICA_DIR (default /tmp/syncstore-mdbreplica), owned by
# the mysql user. The replica runs with read_only=ON.
set -euo pipefail

base="${SYNCSTORE_MDBREPLICA_DIR:-/tmp/syncstore-mdbreplica}"

say() { printf 'mariadb-replica: %s\n' "$*" >&2; }

port() { echo $((3420 + $1)); }

dsn() { echo "root@tcp(127.0.0.1:$(port "$1"))/"; }

dsns() { echo "$(dsn 1) $(dsn 2)"; }

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$(port "$1")") 2>/dev/null; }

sock() { echo "$base/node$1/run/mysqld.sock"; }

client() { mariadb --no-defaults -S "$(sock "$1")" -uroot -N -B -e "$2"; }

# replicating: the replica's SQL and IO threads both run.
replicating() {
	mariadb --no-defaults -S "$(sock 2)" -uroot -e "SHOW SLAVE STATUS\G" 2>/dev/null |
		grep -c -E "Slave_(IO|SQL)_Running: Yes" | grep -q 2
}

write_config() {
	local n=$1 dir="$base/node$1" extra=""
	install -d -o mysql -g mysql -m 0750 "$dir" "$dir/data" "$dir/run" "$dir/tmp"
	if [ "$n" = 1 ]; then
		extra="log-bin = $dir/data/binlog"
	else
		extra="read_only = ON"
	fi
	cat >"$dir/my.cnf" <<EOF
[mariadbd]
user                     = mysql
datadir                  = $dir/data
# A tmpdir of its own: a mariadbd starting with tmpdir=/tmp deletes every
# #sql* file there, also the temporary tables of another instance's
# mariadb-install-db running at the same time (the lanes start together).
tmpdir                   = $dir/tmp
socket                   = $(sock "$n")
pid-file                 = $dir/run/mysqld.pid
log-error                = $dir/error.log
bind-address             = 127.0.0.1
port                     = $(port "$n")
skip-name-resolve
server-id                = $n
binlog_format            = ROW
innodb_buffer_pool_size  = 64M
innodb_flush_log_at_trx_commit = 2
character-set-server     = utf8mb4
$extra
EOF
	chmod 0644 "$dir/my.cnf"
	chown mysql:mysql "$dir/my.cnf"
	if [ ! -d "$dir/data/mysql" ]; then
		mariadb-install-db --no-defaults --user=mysql --datadir="$dir/data" --tmpdir="$dir/tmp" \
			--auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 ||
			{ cat "$dir/install.log" >&2; return 1; }
	fi
}

start_node() {
	local n=$1 dir="$base/node$1"
	if answers "$n"; then return 0; fi
	start-stop-daemon --start --background --pidfile "$dir/run/mysqld.pid" \
		--exec /usr/sbin/mariadbd -- --defaults-file="$dir/my.cnf"
	for _ in $(seq 1 120); do
		if client "$n" "SELECT 1" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	say "node $n did not start; its log:"
	tail -40 "$dir/error.log" >&2 || true
	return 1
}

cmd_start() {
	local fresh=0
	[ -d "$base/node2/data/mysql" ] || fresh=1
	write_config 1
	write_config 2
	start_node 1
	start_node 2
	if [ "$fresh" = 1 ]; then
		# Tests connect as root@127.0.0.1 without a password over TCP;
		# the replica connects as repl. Created on the primary before the
		# replica starts replicating from the beginning of its binlog.
		client 1 "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
			GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
			CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';
			GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';"
		client 2 "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
			GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;"
		# The replica starts from the primary's first GTID, so users made
		# above replicate as no-ops (IF NOT EXISTS).
		client 2 "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$(port 1),
			MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos;
			SET GLOBAL gtid_slave_pos='';
			START SLAVE;"
	fi
	for _ in $(seq 1 60); do
		if replicating; then
			say "primary on $(port 1), replica on $(port 2), replicating"
			dsns
			return 0
		fi
		sleep 0.5
	done
	say "the replica does not replicate:"
	mariadb --no-defaults -S "$(sock 2)" -uroot -e "SHOW SLAVE STATUS\G" >&2 || true
	return 1
}

cmd_stop() {
	for n in 2 1; do
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

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
dsns) dsns ;;
*)
	echo "usage: $0 start|stop|dsns" >&2
	exit 2
	;;
esac

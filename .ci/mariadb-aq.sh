#!/usr/bin/env bash
# A MariaDB of its own on loopback for the authoritative-query run-time
# proof (AQ-6): hostile statements that MariaDB may leave
# running after KILL run here, never on the machine's shared server.
#
#   .ci/mariadb-aq.sh start   create and start it; prints its DSN
#   .ci/mariadb-aq.sh stop    stop it and remove its files
#
# Port 127.0.0.1:7431. Files under $SYNCSTORE_MDBAQ_DIR (default
# /tmp/syncstore-mdbaq), owned by the mysql user. Then:
#
#   SYNCSTORE_TEST_MARIADB_AQ="$(.ci/mariadb-aq.sh start)" \
#     go test -run TestAQThreadsEndOnOwnServer ./drivers/mysql
set -euo pipefail

dir="${SYNCSTORE_MDBAQ_DIR:-/tmp/syncstore-mdbaq}"
port=7431
sock="$dir/run/mysqld.sock"

say() { printf 'mariadb-aq: %s\n' "$*" >&2; }
client() { mariadb --no-defaults -S "$sock" -uroot -N -B -e "$1"; }

cmd_start() {
	install -d -o mysql -g mysql -m 0750 "$dir" "$dir/data" "$dir/run" "$dir/tmp"
	cat >"$dir/my.cnf" <<EOF
[mariadbd]
user                     = mysql
datadir                  = $dir/data
tmpdir                   = $dir/tmp
socket                   = $sock
pid-file                 = $dir/run/mysqld.pid
log-error                = $dir/error.log
bind-address             = 127.0.0.1
port                     = $port
skip-name-resolve
innodb_buffer_pool_size  = 64M
innodb_flush_log_at_trx_commit = 2
character-set-server     = utf8mb4
EOF
	chmod 0644 "$dir/my.cnf"
	chown mysql:mysql "$dir/my.cnf"
	if [ ! -d "$dir/data/mysql" ]; then
		mariadb-install-db --no-defaults --user=mysql --datadir="$dir/data" --tmpdir="$dir/tmp" \
			--auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 ||
			{ cat "$dir/install.log" >&2; return 1; }
	fi
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		start-stop-daemon --start --background --pidfile "$dir/run/mysqld.pid" \
			--exec /usr/sbin/mariadbd -- --defaults-file="$dir/my.cnf"
	fi
	for _ in $(seq 1 120); do
		if client "SELECT 1" >/dev/null 2>&1; then
			client "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
				GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;"
			echo "root@tcp(127.0.0.1:$port)/"
			return 0
		fi
		sleep 0.5
	done
	say "did not start; its log:"
	tail -40 "$dir/error.log" >&2 || true
	return 1
}

cmd_stop() {
	local pid
	if pid=$(cat "$dir/run/mysqld.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
		# A thread MariaDB cannot end makes a clean shutdown wait (seen:
		# over 40 s after the replace and doubling shapes): 30 s, then KILL.
		kill -TERM "$pid"
		for _ in $(seq 1 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "clean shutdown did not end in 30 s; killing $pid"
			kill -KILL "$pid"
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

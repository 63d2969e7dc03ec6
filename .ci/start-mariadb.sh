#!/usr/bin/env bash
# Start the local MariaDB service for the tests if 127.0.0.1:3306 does not
# answer, then wait until it does. Idempotent: a running server is left
# alone (start-stop-daemon --oknodo). Used by .ci/run; the tests find the
# server as root@tcp(127.0.0.1:3306)/ (internal/testdb) unless
# SYNCSTORE_TEST_MYSQL_DSN names another one.
set -euo pipefail

answers() { (exec 3<>/dev/tcp/127.0.0.1/3306) 2>/dev/null; }

if answers; then
	echo "MariaDB answers on 127.0.0.1:3306"
	exit 0
fi

mariadbd=/usr/sbin/mariadbd
if [ ! -x "$mariadbd" ]; then
	echo "MariaDB is not answering on 127.0.0.1:3306 and $mariadbd is not installed" >&2
	exit 1
fi
# The server needs its runtime directory (socket, pid file).
install -d -o mysql -g mysql /run/mysqld 2>/dev/null || mkdir -p /run/mysqld
# Identified by its pid file, not its executable: the cluster and replica
# lanes (.ci/galera.sh, .ci/mariadb-replica.sh) run mariadbd too.
pidfile=/run/mysqld/mysqld.pid
if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then rm -f "$pidfile"; fi
start-stop-daemon --start --oknodo --background --pidfile "$pidfile" --exec "$mariadbd" -- --user=mysql --pid-file="$pidfile"

for _ in $(seq 1 60); do
	if answers; then
		echo "MariaDB started and answers on 127.0.0.1:3306"
		exit 0
	fi
	sleep 1
done
echo "MariaDB did not answer on 127.0.0.1:3306 within 60 s" >&2
exit 1

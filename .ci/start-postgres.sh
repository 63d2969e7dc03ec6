#!/bin/sh
# Starts the local PostgreSQL cluster when 127.0.0.1:5432 does not answer,
# then waits (up to 60 s) until it does. Idempotent: a running server is
# left alone. Used by .ci/run before the PostgreSQL tests.
set -eu

answers() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h 127.0.0.1 -p 5432
	else
		(exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null
	fi
}

if answers; then
	echo "postgres: already answering on 127.0.0.1:5432"
	exit 0
fi
version=$(ls /etc/postgresql | sort -V | tail -n 1)
echo "postgres: starting cluster $version/main"
pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
i=0
until answers; do
	i=$((i + 1))
	if [ "$i" -ge 120 ]; then
		echo "postgres: 127.0.0.1:5432 does not answer after 60 s" >&2
		exit 1
	fi
	sleep 0.5
done
echo "postgres: answering on 127.0.0.1:5432"

#!/bin/sh
# The d1http miniflare lane: D1's real engine (workerd, run by miniflare)
# behind a Worker serving D1's HTTP query API (drivers/d1http/miniflare).
#
#   .ci/start-miniflare.sh [start]   start it on 127.0.0.1 unless it already
#                                    answers; prints the endpoint on stdout:
#                                    export SYNCSTORE_TEST_D1_MINIFLARE="$(.ci/start-miniflare.sh)"
#   .ci/start-miniflare.sh stop      stop the instance this script started
#
# Env: SYNCSTORE_MINIFLARE_PORT (default 8788); SYNCSTORE_D1_TOKEN, the
# bearer token (default syncstore-test, what the Go tests use). Idempotent:
# a running lane is left alone. Messages go to stderr; the log is
# ${TMPDIR:-/tmp}/syncstore-miniflare-PORT.log. Needs Node >= 20 and npm.
set -eu
cd "$(dirname "$0")/../drivers/d1http/miniflare"

port=${SYNCSTORE_MINIFLARE_PORT:-8788}
endpoint="http://127.0.0.1:$port"
run=${TMPDIR:-/tmp}/syncstore-miniflare-$port
pidfile=$run.pid

answers() {
	node -e "fetch('$endpoint/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" 2>/dev/null
}

case "${1:-start}" in
stop)
	if [ -f "$pidfile" ]; then
		pid=$(cat "$pidfile")
		# server.mjs leads its own process group (setsid): end it and workerd.
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 20 ]; do
			sleep 0.5
			i=$((i + 1))
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
		rm -f "$pidfile"
		echo "miniflare: stopped (pid $pid)" >&2
	else
		echo "miniflare: no instance started by this script on port $port" >&2
	fi
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 [start|stop]" >&2
	exit 2
	;;
esac

if answers; then
	echo "miniflare: already answering on $endpoint" >&2
	echo "$endpoint"
	exit 0
fi
if [ ! -x node_modules/.bin/miniflare ]; then
	echo "miniflare: npm ci (miniflare pinned by package-lock.json)" >&2
	npm ci --no-audit --no-fund >&2
fi
echo "miniflare: starting on $endpoint (log $run.log)" >&2
setsid node server.mjs --port "$port" >"$run.log" 2>&1 </dev/null &
echo $! >"$pidfile"
i=0
until answers; do
	i=$((i + 1))
	if [ "$i" -ge 120 ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		echo "miniflare: $endpoint does not answer; log:" >&2
		cat "$run.log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "miniflare: answering on $endpoint" >&2
echo "$endpoint"

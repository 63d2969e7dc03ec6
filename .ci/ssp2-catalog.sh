#!/usr/bin/env bash
# .ci/ssp2-catalog.sh [DRIVER...] — upstream Syncular's conformance catalog
# with its real TypeScript client against our Go SSP2 server, per driver
# (default: sqlite postgres mysql d1http), then the examples/syncular demo
# test on the same drivers. docs/testing.md describes the lane.
#
# Per driver: the conformance host (internal/ssp2conf/cmd/ssp2host) on a
# loopback port — sqlite stores in temporary directories, postgres and
# mysql databases on the local servers (SYNCSTORE_TEST_POSTGRES_DSN /
# SYNCSTORE_TEST_MYSQL_DSN point elsewhere), d1http databases on a D1 HTTP
# double the host starts — and `bun test` of internal/ssp2conf/ts's
# catalog test in a workspace made by shared/syncular/setup.sh (Bun comes
# from npm). Prints pass / skip / FAIL per scenario and a summary; exits 1
# when a scenario that ran (no capability gates it, or the driver declares
# its capability) fails on any driver, when any is skipped (every
# capability of the catalog is declared: a skip means one was dropped), or a
# host does not shut down cleanly (every store dropped).
#
# Environment:
#   SYNCULAR_UPSTREAM      upstream/ directory (its parent holds setup.sh);
#                          else shared/syncular above the repository, else
#                          /work/shared/syncular. None: a loud skip, exit 0.
#   SYNCULAR_WORKSPACE     a workspace setup.sh made (reused; else a new one)
#   SSP2_LANE_JOBS         drivers run at once (default 2)
#   SSP2_LANE_DEMO=0       skip the demo test (.ci/run: go test ./... ran it)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

drivers=("$@")
if [ "${#drivers[@]}" -eq 0 ]; then drivers=(sqlite postgres mysql d1http); fi
jobs=${SSP2_LANE_JOBS:-2}

find_shared() {
	if [ -n "${SYNCULAR_UPSTREAM:-}" ]; then
		if [ -f "$SYNCULAR_UPSTREAM/docs/SPEC.md" ] && [ -f "$SYNCULAR_UPSTREAM/../setup.sh" ]; then
			(cd "$SYNCULAR_UPSTREAM/.." && pwd)
			return 0
		fi
		echo "SYNCULAR_UPSTREAM=$SYNCULAR_UPSTREAM has no docs/SPEC.md beside a ../setup.sh" >&2
		return 2
	fi
	local d=$root
	while :; do
		if [ -f "$d/shared/syncular/setup.sh" ]; then
			echo "$d/shared/syncular"
			return 0
		fi
		[ "$d" = / ] && break
		d=$(dirname "$d")
	done
	if [ -f /work/shared/syncular/setup.sh ]; then
		echo /work/shared/syncular
		return 0
	fi
	return 1
}

rc=0
shared=$(find_shared) || rc=$?
if [ "$rc" -eq 1 ]; then
	echo "SKIP (loud): no shared/syncular materials (setup.sh, upstream/) found; set SYNCULAR_UPSTREAM to run upstream's catalog against our server"
	exit 0
elif [ "$rc" -ne 0 ]; then
	exit 1
fi

work=$(mktemp -d -t ssp2lane.XXXXXX)
cleanup() {
	for f in "$work"/*.hostpid; do
		[ -e "$f" ] || continue
		kill -TERM "$(cat "$f")" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

lane_start=$(date +%s)
ws=${SYNCULAR_WORKSPACE:-$work/ws}
echo "workspace: $ws (from $shared)"
bun=$(bash "$shared/setup.sh" "$ws" | tail -n 1)
"$bun" --version >/dev/null
rm -rf "$ws/packages/ssp2-conformance"
cp -r internal/ssp2conf/ts "$ws/packages/ssp2-conformance"
(cd "$ws" && "$bun" install --ignore-scripts >/dev/null)
go build -o "$work/ssp2host" ./internal/ssp2conf/cmd/ssp2host
echo "setup: $(($(date +%s) - lane_start)) s (bun $("$bun" --version))"

# crdt/yjs's merger against the workspace's real Yjs (the yjs-doc merger
# the crdt scenarios below run through).
yjs_dir=$(ls -d "$ws"/node_modules/.bun/yjs@*/node_modules/yjs 2>/dev/null | head -n 1 || true)
if [ -z "$yjs_dir" ]; then
	echo "FAIL: no yjs package in the workspace for crdt/yjs's differential test"
	exit 1
fi
SYNCSTORE_YJS_DIR="$yjs_dir" SYNCSTORE_BUN="$bun" go test -count=1 -run '^TestMergeMatchesYjs$' ./crdt/yjs

# run_driver DRIVER: the host, the catalog, the host's shutdown. Its
# verdict is the report ($work/DRIVER.json) and $work/DRIVER.hostrc.
run_driver() {
	local d=$1 dsn="" port="" i start
	start=$(date +%s)
	case $d in
	postgres) dsn=${SYNCSTORE_TEST_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable} ;;
	mysql) dsn=${SYNCSTORE_TEST_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/} ;;
	esac
	"$work/ssp2host" -driver "$d" -dsn "$dsn" -v >"$work/$d.hostout" 2>"$work/$d.hostlog" &
	local hp=$!
	echo "$hp" >"$work/$d.hostpid"
	for i in $(seq 1 600); do
		port=$(awk '/^SSP2HOST_READY /{print $2}' "$work/$d.hostout")
		[ -n "$port" ] && break
		kill -0 "$hp" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$port" ]; then
		echo "ssp2host ($d) did not start:" >"$work/$d.hostrc"
		tail -n 20 "$work/$d.hostlog" >>"$work/$d.hostrc"
		return
	fi
	(cd "$ws" && SSP2HOST_URL="http://127.0.0.1:$port" SSP2_DRIVER_LABEL="syncstore-go/$d" \
		SSP2_CATALOG_REPORT="$work/$d.json" \
		"$bun" test packages/ssp2-conformance/test/catalog.test.ts >"$work/$d.bunlog" 2>&1) || true
	kill -TERM "$hp"
	local hrc=0
	wait "$hp" || hrc=$?
	rm -f "$work/$d.hostpid"
	if [ "$hrc" -ne 0 ]; then
		{
			echo "ssp2host ($d) exited $hrc on SIGTERM (stores not all dropped?):"
			tail -n 20 "$work/$d.hostlog"
		} >"$work/$d.hostrc"
	fi
	echo "$d: $(($(date +%s) - start)) s" >"$work/$d.time"
}

running=0
for d in "${drivers[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
	echo "catalog on $d: started"
	run_driver "$d" &
	running=$((running + 1))
done
wait

reports=()
for d in "${drivers[@]}"; do reports+=("$d=$work/$d.json"); done
verdict=0
(cd "$ws" && "$bun" packages/ssp2-conformance/report.ts "${reports[@]}") || verdict=1
for d in "${drivers[@]}"; do
	if [ -s "$work/$d.hostrc" ]; then
		cat "$work/$d.hostrc"
		verdict=1
	fi
	if [ ! -s "$work/$d.json" ]; then
		echo "--- bun output on $d (no report):"
		tail -n 40 "$work/$d.bunlog"
	fi
	cat "$work/$d.time" 2>/dev/null || true
done

if [ "${SSP2_LANE_DEMO:-1}" != 0 ]; then
	echo
	echo "--- examples/syncular demo test (the real SyncClient) on ${drivers[*]}"
	pattern=$(
		IFS='|'
		echo "${drivers[*]}"
	)
	SYNCULAR_WORKSPACE="$ws" SYNCULAR_BUN="$bun" SYNCSTORE_TEST_REQUIRE_DB=1 \
		go test -count=1 -run "TestDemo/^($pattern)\$" ./examples/syncular || verdict=1
fi
echo "lane: $(($(date +%s) - lane_start)) s"
exit "$verdict"

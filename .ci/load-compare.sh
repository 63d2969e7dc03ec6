#!/usr/bin/env bash
# .ci/load-compare.sh [--smoke] [--scenarios a,b] [--targets x,y] [--out FILE]
# .ci/load-compare.sh --bootstrap [--rows 10000,100000] [--lanes rows,image]
#                     [--targets x,y] [--runs 5] [--out FILE]
#
# Upstream Syncular's load suite (load/: push-pull, bootstrap-storm,
# reconnect-storm, maintenance-churn, mixed-soak) run side by side against
# upstream's own load server (bun:sqlite, and PostgreSQL through
# SYNCULAR_PG_URL) and our SSP2 server (internal/ssp2load/cmd/ssp2load on
# sqlite, postgres, mysql), every scenario interleaved across the servers,
# each run on a fresh server process and a fresh database dropped after
# it. Prints one table and the ratios ours/upstream; docs/performance.md
# explains the figures. Not part of .ci/run or go test: a benchmark wants a
# quiet machine (the full profile takes about 20 minutes; --smoke about 3).
#
# In a workspace made by shared/syncular/setup.sh it applies
# internal/ssp2load/ts/load-epoch.patch to upstream's virtual client (the
# suite as shipped never acquires the log epoch, SPEC §2.1), puts our
# launcher (internal/ssp2load/ts/server.ts) in place of load/src/server.ts
# (upstream's moves to upstream-server.ts and still serves the upstream
# targets) and runs internal/ssp2load/ts/compare.ts.
#
# --bootstrap runs internal/ssp2load/ts/bootstrap.ts instead (from the
# workspace's bench/, beside upstream's bench): upstream's real TypeScript
# client bootstrapping 10,000 and 100,000 seeded rows to a fully applied
# replica, rows lane and SQLite image lane, from upstream's server in
# process (its bench lane) and over loopback HTTP (bun:sqlite, PostgreSQL)
# and from ours over loopback HTTP (sqlite, postgres, mysql), with each
# server's peak RSS; about 10 minutes (upstream-pg only when --targets
# names it).
#
# Environment:
#   SYNCULAR_UPSTREAM          upstream/ directory (its parent holds setup.sh);
#                              else shared/syncular above the repository,
#                              else /work/shared/syncular
#   SYNCULAR_LOAD_PG_ADMIN_URL where upstream-pg's databases are created
#                              (default postgres://postgres@127.0.0.1:5432/postgres)
#   SYNCSTORE_TEST_POSTGRES_DSN / SYNCSTORE_TEST_MYSQL_DSN are not read:
#   ours provisions on the drivers' default local servers (127.0.0.1:5432,
#   127.0.0.1:3306).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

shared=""
if [ -n "${SYNCULAR_UPSTREAM:-}" ]; then
	shared=$(cd "$SYNCULAR_UPSTREAM/.." && pwd)
else
	d=$root
	while [ "$d" != / ]; do
		if [ -f "$d/shared/syncular/setup.sh" ]; then shared=$d/shared/syncular; break; fi
		d=$(dirname "$d")
	done
	[ -z "$shared" ] && [ -f /work/shared/syncular/setup.sh ] && shared=/work/shared/syncular
fi
if [ -z "$shared" ] || [ ! -f "$shared/setup.sh" ] || [ ! -d "$shared/upstream/load" ]; then
	echo "load-compare: no shared/syncular (setup.sh, upstream/load) found; set SYNCULAR_UPSTREAM" >&2
	exit 2
fi

work=$(mktemp -d -t loadcompare.XXXXXX)
trap 'rm -rf "$work"' EXIT
ws=$work/ws
echo "load-compare: workspace $ws (from $shared)" >&2
bun=$(bash "$shared/setup.sh" "$ws" | tail -n 1)
export PATH="$(dirname "$bun"):$PATH" # the harness spawns servers with `bun run`

(cd "$ws" && patch -s -p1 <"$root/internal/ssp2load/ts/load-epoch.patch")
mv "$ws/load/src/server.ts" "$ws/load/src/upstream-server.ts"
cp "$root/internal/ssp2load/ts/server.ts" "$root/internal/ssp2load/ts/compare.ts" "$ws/load/src/"
cp "$root/internal/ssp2load/ts/bootstrap.ts" "$ws/bench/src/"

GOFLAGS=${GOFLAGS:--p=1} go build -o "$work/ssp2load" ./internal/ssp2load/cmd/ssp2load
export SSP2LOAD_BIN=$work/ssp2load

# Upstream's bun:sqlite storage deletes a written row's scopes by
# (partition, tbl, row_id), which no index of sync_row_scopes serves:
# seeding is quadratic (100,000 rows: over 10 minutes here; bootstrap-
# storm's full profile seeds 100,000 rows, mixed-soak's 20,000). A
# temporary index serves it while the load server seeds, and is dropped
# before the server listens: same rows, same schema after. Seeding is not
# timed in either mode.
perl -0pi -e 's/(  const rand = seededRandom\(0x10adb6\);\n)/  const seedDb = (storage as any).db;\n  seedDb?.exec?.("CREATE INDEX load_seed_scopes ON sync_row_scopes(partition, tbl, row_id)");\n$1/; s/(    await tx.commit\(\);\n  \}\n)/$1  seedDb?.exec?.("DROP INDEX load_seed_scopes");\n/' "$ws/load/src/upstream-server.ts"
if [ "$(grep -c load_seed_scopes "$ws/load/src/upstream-server.ts")" != 2 ]; then
	echo "load-compare: upstream's load/src/server.ts seeding changed; the seed index patch did not apply" >&2
	exit 2
fi
if [ "${1:-}" = --bootstrap ]; then
	shift
	cd "$ws/bench"
	"$bun" run src/bootstrap.ts "$@"
else
	cd "$ws/load"
	"$bun" run src/compare.ts "$@"
fi

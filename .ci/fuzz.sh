#!/usr/bin/env bash
# Runs every fuzz target of the repository briefly (CI: on every push).
# Usage: .ci/fuzz.sh [fuzztime]   (default 10s per target; e.g. 10m for a soak)
# Each target's seed corpus (f.Add and testdata/fuzz/<target>/) also runs in
# plain `go test`; this script explores beyond it. A crash makes go test
# write the input to testdata/fuzz/<target>/ — commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-10s}"

targets=(
	"./driver FuzzDecodePushResult"
	"./driver FuzzDecodeValues"
	"./driver FuzzValuesRoundTrip"
	"./sync FuzzScopeFilter"
	"./sync FuzzIdentifier"
	"./sync FuzzValue"
	"./sync FuzzPullToken"
	"./internal/querylang FuzzTokenize"
	"./internal/querylang FuzzCheckQueryText"
	"./internal/sqlitesql FuzzAppendJSONString"
	"./drivers/postgres FuzzFrame"
	"./drivers/mysql FuzzMySQLQueryRewrite"
	"./drivers/d1http/internal/d1sql FuzzD1QueryRewrite"
	"./drivers/d1http/internal/d1sql FuzzD1RewriteCost"
	"./drivers/postgres FuzzRewriteCost"
	"./drivers/mysql FuzzRewriteCost"
	"./ssp2 FuzzDecodeRequest"
	"./ssp2 FuzzDecodeResponse"
	"./ssp2 FuzzDecodeSegment"
	"./ssp2 FuzzRowDecode"
	"./ssp2 FuzzParseControl"
	"./ssp2 FuzzJSONValid"
	"./server FuzzHandler"
	"./crdt/yjs FuzzMerge"
)

# Every Fuzz function of the repository must be listed above: a new target
# that CI never runs is a target nobody runs.
missing=0
while IFS=: read -r file _ decl; do
	name="$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$decl")"
	pkg="./$(dirname "${file#./}")"
	if ! printf '%s\n' "${targets[@]}" | grep -qx "$pkg $name"; then
		echo "fuzz: $pkg $name is not in .ci/fuzz.sh's target list" >&2
		missing=1
	fi
done < <(grep -rn --include='*_test.go' '^func Fuzz' . | grep -v '^./examples/')
[ "$missing" = 0 ] || exit 1

# Each package's test binary is built once, with the fuzzing
# instrumentation (go test -c -fuzz), and runs each of its targets in the
# package's directory (testdata/fuzz/<target> is read and written there);
# the generated corpus goes where go test -fuzz keeps it. Building per
# target relinked the same binary every time.
bindir="$(mktemp -d -t syncstore-fuzz.XXXXXX)"
trap 'rm -rf "$bindir"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"
module="$(go list -m)"
declare -A built=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	bin="$bindir/$(tr '/.' '__' <<<"$pkg").test"
	if [ -z "${built[$pkg]:-}" ]; then
		go test -c -o "$bin" -fuzz "^${name}\$" "$pkg"
		built[$pkg]=1
	fi
	printf '\n==> fuzz %s %s (%s)\n' "$pkg" "$name" "$fuzztime"
	# -test.run '^$': the seed corpora already ran in go test; -parallel 2 fits CI's 2 cores.
	# A real finding makes the binary write the input ("Failing input written
	# to testdata/fuzz/..."): that fails CI. The fuzz engine can also end a
	# short run with "context deadline exceeded" and no input, a timing
	# artefact of the coordinator, not a finding: that is reported, not failed.
	if ! out="$(cd "$pkg" && "$bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzztime "$fuzztime" \
		-test.parallel 2 -test.timeout 10m -test.fuzzcachedir "$fuzzcache/$module/${pkg#./}" 2>&1)"; then
		echo "$out"
		if grep -q 'Failing input written to' <<<"$out" || ! grep -q 'context deadline exceeded' <<<"$out"; then
			exit 1
		fi
		echo "fuzz: $name ended on the engine's own deadline with no failing input (not a finding)"
	else
		echo "$out" | tail -n 3
	fi
done
printf '\n==> fuzz: %d targets passed\n' "${#targets[@]}"

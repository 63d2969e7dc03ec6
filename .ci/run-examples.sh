#!/usr/bin/env bash
# Runs the tests of every example that is its own Go module (today:
# examples/memdriver, the third-party driver built from exported API
# only). Called from .ci/run; run it from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

for mod in examples/memdriver; do
	printf '\n==> %s: gofmt, go vet, go test, go test -race\n' "$mod"
	(
		cd "$mod"
		unformatted="$(gofmt -l .)"
		if [ -n "$unformatted" ]; then
			echo "gofmt needed on:"
			echo "$unformatted"
			exit 1
		fi
		# The module must build against this checkout with a tidy go.mod.
		go mod tidy -diff
		go vet ./...
		go test ./...
		go test -race ./...
		# The two-line main.go gives the CLI report (exit 0: every case passed).
		report="$(go run ./cmd/conformance -driver memory -format junit)"
		grep -q ' failures="0"' <<<"$report"
		echo "CLI report OK: $(grep -c '<testcase ' <<<"$report") testcases"
	)
done

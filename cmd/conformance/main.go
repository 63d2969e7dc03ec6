// Command conformance runs the syncstore conformance suite against a
// registered driver and prints a capability matrix, one line per case and a
// summary (or a JSON / JUnit report). It links in the bundled drivers:
//
//	go run ./cmd/conformance                       # embedded SQLite in a temp dir
//	go run ./cmd/conformance -run '^SEQ-' -v       # one rule group, with output
//	go run ./cmd/conformance -format junit > conformance.xml
//	go run ./cmd/conformance -format jsonl         # one JSON line per case, as it finishes
//	go run ./cmd/conformance -list                 # the cases, by rule and capability
//
// Exit status: 0 all passed (or skipped, not implemented), 1 a case
// failed, 2 usage or harness error, 130 interrupted by SIGINT or SIGTERM
// (unfinished cases are reported INTERRUPTED; every provisioned store is
// still dropped).
// The flags are documented in package
// github.com/syncstore/syncstore/conformance/cli, which a third-party driver
// reuses with a two-line main.go of its own.
package main

import (
	_ "github.com/syncstore/syncstore/drivers/d1http"   // registers "d1http"
	_ "github.com/syncstore/syncstore/drivers/mysql"    // registers "mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres" // registers "postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"   // registers "sqlite"

	"github.com/syncstore/syncstore/conformance/cli"
)

func main() { cli.Main() }

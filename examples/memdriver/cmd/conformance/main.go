// Command conformance runs the syncstore conformance suite against the
// memory driver and prints the same report as the repository's
// cmd/conformance:
//
//	go run ./cmd/conformance -driver memory
//	go run ./cmd/conformance -driver memory -run '^IXL-' -v
//	go run ./cmd/conformance -driver memory -format junit > conformance.xml
//
// This file is the whole integration: a blank import that registers the
// driver, and the CLI package's Main.
package main

import (
	_ "github.com/syncstore/syncstore/examples/memdriver" // registers "memory"

	"github.com/syncstore/syncstore/conformance/cli"
)

func main() { cli.Main() }

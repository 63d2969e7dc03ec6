// Command d1test serves the D1 HTTP double (package d1test) on an
// address, for running cmd/conformance against the d1http driver:
//
//	go run ./drivers/d1http/d1test/cmd/d1test -addr 127.0.0.1:8787 -token t &
//	go run ./cmd/conformance -driver d1http -dsn 'd1://acct?token=t&endpoint=http://127.0.0.1:8787'
//
// Databases are created through the API (the driver's Provisioner does).
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/syncstore/syncstore/drivers/d1http/d1test"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8787", "listen address")
	token := flag.String("token", "", "bearer token to require (empty: any)")
	flag.Parse()
	h := d1test.NewHandler(*token)
	defer h.Close()
	log.Printf("d1test: serving the D1 HTTP double on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, h))
}

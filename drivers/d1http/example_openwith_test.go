package d1http_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/sync"
)

// A host sends the store's requests through its own *http.Client (its
// transport, proxy, tracing).
func ExampleOpenWith() {
	ctx := context.Background()
	hc := &http.Client{Transport: http.DefaultTransport, Timeout: time.Minute}
	conn, err := d1http.OpenWith(ctx, "d1://ACCOUNT_ID/DATABASE_ID?token=…", d1http.Options{HTTPClient: hc})
	if err != nil {
		log.Fatal(err)
	}
	store := sync.OpenConn(conn)
	defer store.Close()
}

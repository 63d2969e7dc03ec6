// Command server is a runnable sync server: push and pull over HTTP+JSON
// on the engine of package sync, over any driver.
//
//	go run ./examples/server -driver sqlite -dsn app.db -addr 127.0.0.1:8080
//
// Each request names its partition (tenant) in the path and its actor in
// the X-Actor header (a real host authenticates instead):
//
//	POST /v1/{partition}/push  sync.PushRequest  → sync.PushResponse
//	POST /v1/{partition}/pull  sync.PullRequest  → sync.PullResponse
//
// in the JSON form of package sync (docs/wire.md), e.g. a push
// {"clientId","clientCommitId","ops":[{"table","rowId","op","values","baseVersion"}]}.
// An error is a *sync.Error as JSON ({"code","message","rule","retryable",…})
// with 400 (bad input), 409 (a conflict the client resolves), 503
// (retryable) or 500.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/syncstore/syncstore/drivers/d1http"
	_ "github.com/syncstore/syncstore/drivers/mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/sync"
)

// schema is the example's: todos, scoped by project.
var schema = sync.Schema{Version: 1, Tables: []sync.Table{{Name: "todos", PrimaryKey: "id",
	Columns: []sync.Column{{Name: "id", Type: sync.TypeString}, {Name: "title", Type: sync.TypeString},
		{Name: "done", Type: sync.TypeBoolean}, {Name: "project_id", Type: sync.TypeString}},
	Scopes: []sync.Scope{{Variable: "project", Column: "project_id"}}}}}

func main() {
	drv := flag.String("driver", "sqlite", "driver name: sqlite, postgres, mysql, d1http")
	dsn := flag.String("dsn", "app.db", "the store's DSN")
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	store, err := sync.Open(*drv, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.EnsureSchema(ctx, schema); err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *addr, Handler: newHandler(store), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("syncing on http://%s (driver %s)", *addr, *drv)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

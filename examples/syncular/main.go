// Command syncular is a runnable SSP2 host: upstream Syncular's clients
// (its web client, its conformance drivers, another implementation's
// tests) sync against it over HTTP and WebSocket, on any of syncstore's
// drivers.
//
//	go run ./examples/syncular -driver sqlite -dsn demo.db -addr 127.0.0.1:8788
//	go run ./examples/syncular -driver postgres -dsn 'postgres://postgres@127.0.0.1:5432/demo'
//	go run ./examples/syncular -driver mysql -dsn 'root@tcp(127.0.0.1:3306)/demo'
//	go run ./examples/syncular -driver d1http -dsn 'd1://ACCOUNT/DATABASE?token=…&endpoint=…'
//
// Its conventions are fixed, so tests of other implementations can rely
// on them:
//
//   - Mounted at "/": POST /sync, GET /realtime?clientId=…, GET /segments/{id}.
//   - Auth: "Authorization: Bearer <actor>" on every request; missing or
//     empty → 401 sync.auth_required. A browser cannot set headers on a
//     WebSocket, so the upgrade of /realtime also takes the actor as
//     ?token=<actor> when the header is absent.
//   - One partition, "demo".
//   - Schema version 1, one table todos: id, list_id, title (string), done
//     (boolean), position (integer), all not null; weight (float), meta
//     (json), blob (bytes), nullable; primary key id; scope
//     list:{list_id} on list_id.
//   - Scopes: actor "mallory" may see list_id "mallory-list" only; every
//     other actor every list.
//   - POST /admin/prune prunes everything it may (force age 0, keep 0) and
//     answers {"horizonSeq","maxCommitSeq","commitsPruned"}.
//   - POST /admin/rotate rotates the partition's log epoch (SPEC §2.1)
//     and answers {"logEpoch"}.
//
// Once listening it prints "syncular demo: serving on http://ADDR" on
// stdout. SIGINT or SIGTERM closes the sockets and the store.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/syncstore/syncstore/drivers/d1http"
	_ "github.com/syncstore/syncstore/drivers/mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// partition is the demo's one partition.
const partition = "demo"

// schema is the demo's schema IR.
var schema = ssp2.Schema{Version: 1, Tables: []ssp2.Table{{
	Name: "todos",
	Columns: []ssp2.Column{
		{Name: "id", Type: ssp2.TypeString},
		{Name: "list_id", Type: ssp2.TypeString},
		{Name: "title", Type: ssp2.TypeString},
		{Name: "done", Type: ssp2.TypeBoolean},
		{Name: "position", Type: ssp2.TypeInteger},
		{Name: "weight", Type: ssp2.TypeFloat, Nullable: true},
		{Name: "meta", Type: ssp2.TypeJSON, Nullable: true},
		{Name: "blob", Type: ssp2.TypeBytes, Nullable: true},
	},
	PrimaryKey: "id",
	Scopes:     []ssp2.ScopePattern{{Pattern: "list:{list_id}"}},
}}}

func main() {
	drv := flag.String("driver", "sqlite", "driver: sqlite, postgres, mysql, d1http")
	dsn := flag.String("dsn", "syncular-demo.db", "the store's DSN")
	addr := flag.String("addr", "127.0.0.1:8788", "listen address")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("syncular demo: ")
	if err := run(*drv, *dsn, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(drv, dsn, addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	store, err := sync.OpenContext(ctx, drv, dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	engine, err := schema.DriverSchema()
	if err != nil {
		return err
	}
	if err := store.EnsureSchema(ctx, engine); err != nil {
		return err
	}
	srv, err := server.New(store, server.Config{
		Schema:        schema,
		Authenticate:  authenticate,
		ResolveScopes: resolveScopes,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: handler(store, srv), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Printf("syncular demo: serving on http://%s (driver %s)\n", ln.Addr(), drv)
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	return nil
}

// handler mounts the SSP2 server at "/" and the two admin routes.
func handler(store *sync.Store, srv *server.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	mux.HandleFunc("POST /admin/prune", admin(func(r *http.Request) (any, error) {
		// Force age 0 and keep 0 (a zero meaning zero, RET-11); the other
		// fields keep their defaults.
		pol := sync.DefaultRetentionPolicy
		pol.NoDefaults, pol.ForceAge, pol.MinRetainedCommits = true, 0, 0
		rep, err := store.Prune(r.Context(), partition, pol)
		if err != nil {
			return nil, err
		}
		return map[string]int64{"horizonSeq": rep.HorizonAfter, "maxCommitSeq": rep.MaxCommitSeq, "commitsPruned": rep.CommitsPruned}, nil
	}))
	mux.HandleFunc("POST /admin/rotate", admin(func(r *http.Request) (any, error) {
		epoch, err := srv.RotateLogEpoch(r.Context(), partition)
		if err != nil {
			return nil, err
		}
		return map[string]string{"logEpoch": epoch}, nil
	}))
	return mux
}

// admin wraps an admin route: the same bearer auth as the protocol, a
// JSON answer, a JSON error.
func admin(fn func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, ok := bearer(r); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": "sync.auth_required", "message": "Authorization: Bearer <actor> is required", "retryable": false})
			return
		}
		out, err := fn(r)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": "demo.admin_failed", "message": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

// bearer returns the actor of "Authorization: Bearer <actor>".
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	actor := strings.TrimSpace(h[len(prefix):])
	return actor, actor != ""
}

var errNoActor = errors.New("syncular demo: Authorization: Bearer <actor> is required")

// authenticate is the demo's host auth: the bearer token is the actor.
// The realtime upgrade alone also takes ?token=<actor> when the header is
// absent (browsers cannot set WebSocket headers).
func authenticate(r *http.Request) (server.Identity, error) {
	actor, ok := bearer(r)
	if !ok && r.Header.Get("Authorization") == "" && r.URL.Path == "/realtime" {
		actor = strings.TrimSpace(r.URL.Query().Get("token"))
		ok = actor != ""
	}
	if !ok {
		return server.Identity{}, errNoActor
	}
	return server.Identity{Partition: partition, ActorID: actor}, nil
}

// resolveScopes: mallory sees mallory-list only; everyone else every list.
func resolveScopes(_ context.Context, id server.Identity, _ string) (map[string][]string, error) {
	if id.ActorID == "mallory" {
		return map[string][]string{"list_id": {"mallory-list"}}, nil
	}
	return map[string][]string{"list_id": {"*"}}, nil
}

package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/syncstore/syncstore/drivers/sqlite" // registers "sqlite"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// The schema a host serves: the IR a Syncular app generates its client
// from (upstream's DriverSchema JSON).
const schemaJSON = `{"version": 1, "tables": [
 {"name": "tasks", "primaryKey": "id",
  "columns": [
   {"name": "id", "type": "string", "nullable": false},
   {"name": "project_id", "type": "string", "nullable": false},
   {"name": "title", "type": "string", "nullable": false}],
  "scopes": [{"pattern": "project:{project_id}"}]}]}`

// Example is a complete host: a store, the schema ensured, the server
// mounted under /api with the host's authentication and authorization —
// then, standing in for a Syncular client, one sync round.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)

	store, err := sync.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	schema, err := ssp2.ParseSchema([]byte(schemaJSON))
	if err != nil {
		log.Fatal(err)
	}
	engineSchema, err := schema.DriverSchema()
	if err != nil {
		log.Fatal(err)
	}
	if err := store.EnsureSchema(ctx, engineSchema); err != nil {
		log.Fatal(err)
	}

	srv, err := server.New(store, server.Config{
		Schema: *schema,
		// Authentication is the host's: here a bearer token naming the
		// user; the tenant is the partition.
		Authenticate: func(r *http.Request) (server.Identity, error) {
			user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || user == "" {
				return server.Identity{}, errors.New("no token")
			}
			return server.Identity{Partition: "acme", ActorID: user}, nil
		},
		// Authorization too: the projects the user is a member of.
		ResolveScopes: func(ctx context.Context, id server.Identity, clientID string) (map[string][]string, error) {
			return map[string][]string{"project_id": {"p1"}}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", srv))
	ts := httptest.NewServer(mux) // a real host: http.ListenAndServe(addr, mux)
	defer ts.Close()

	// A client's first round acquires the partition's log epoch (SPEC
	// §2.1).
	body, _ := (&ssp2.Message{WireVersion: 2, Kind: ssp2.KindRequest, Frames: []ssp2.Frame{
		&ssp2.ReqHeader{ClientID: "device-1", SchemaVersion: 1},
		&ssp2.PullHeader{Accept: ssp2.AcceptInlineRows | ssp2.AcceptExternalRows},
	}}).Encode()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/sync", bytes.NewReader(body))
	req.Header.Set("Content-Type", server.ContentType)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	m, err := ssp2.DecodeResponse(raw)
	if err != nil {
		log.Fatal(err)
	}
	h := m.Frames[0].(*ssp2.RespHeader)
	fmt.Println(resp.StatusCode, "resetRequired:", h.ResetRequired, "epoch issued:", h.LogEpoch != "")
	// Output: 200 resetRequired: true epoch issued: true
}

// Package enginetest holds ssp2's integration tests with the engine on
// every driver; it is a package of its own so that ssp2's own tests and
// fuzz targets build without the drivers.
package enginetest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	_ "github.com/syncstore/syncstore/drivers/mysql"    // registers "mysql"
	_ "github.com/syncstore/syncstore/drivers/postgres" // registers "postgres"
	_ "github.com/syncstore/syncstore/drivers/sqlite"   // registers "sqlite"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/internal/upstream"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// engines opens a fresh store on every bundled driver (real engines; the
// D1 lane on its local double).
var engines = []struct {
	name string
	open func(t *testing.T) *sync.Store
}{
	{"sqlite", func(t *testing.T) *sync.Store { return openStore(t, "sqlite", filepath.Join(t.TempDir(), "app.db")) }},
	{"postgres", func(t *testing.T) *sync.Store { return openStore(t, "postgres", testdb.NewPostgres(t)) }},
	{"mysql", func(t *testing.T) *sync.Store { return openStore(t, "mysql", testdb.NewMySQL(t)) }},
	{"d1http", func(t *testing.T) *sync.Store {
		srv := d1test.NewServer("test-token")
		t.Cleanup(srv.Close)
		dsn, _, err := d1http.Driver{}.Provision(context.Background(), "d1://acct?token=test-token&endpoint="+srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return openStore(t, "d1http", dsn)
	}},
}

func openStore(t *testing.T, name, dsn string) *sync.Store {
	t.Helper()
	store, err := sync.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// The vectors' notes table as IR: every §2.4 type but blob_ref and crdt,
// scoped by body, the one non-nullable string column besides the key.
// (Scoping by the key column itself fails EnsureSchema on MariaDB with
// error 1060, duplicate column; the other drivers accept it.)
const notesIR = `{"version": 1, "tables": [{"name": "notes", "primaryKey": "id",
  "columns": [
    {"name": "id", "type": "string", "nullable": false},
    {"name": "title", "type": "string", "nullable": true},
    {"name": "body", "type": "string", "nullable": false},
    {"name": "count", "type": "integer", "nullable": true},
    {"name": "score", "type": "float", "nullable": false},
    {"name": "done", "type": "boolean", "nullable": false},
    {"name": "meta", "type": "json", "nullable": true},
    {"name": "blob", "type": "bytes", "nullable": true}],
  "scopes": [{"pattern": "note:{body}"}]}]}`

// everyTypeIR has a column of every §2.4 type, an encrypted one, and scope
// patterns with and without an explicit column.
const everyTypeIR = `{"version": 3, "tables": [{"name": "tasks", "primaryKey": "id",
  "columns": [
    {"name": "id", "type": "string", "nullable": false},
    {"name": "project_id", "type": "string", "nullable": false},
    {"name": "owner", "type": "string", "nullable": false},
    {"name": "n", "type": "integer", "nullable": true},
    {"name": "f", "type": "float", "nullable": true},
    {"name": "b", "type": "boolean", "nullable": false},
    {"name": "j", "type": "json", "nullable": true},
    {"name": "x", "type": "bytes", "nullable": true},
    {"name": "att", "type": "blob_ref", "nullable": true},
    {"name": "doc", "type": "crdt", "nullable": true, "crdtType": "yjs-doc"},
    {"name": "secret", "type": "bytes", "nullable": true, "encrypted": true, "declaredType": "string"}],
  "scopes": [{"pattern": "project:{project_id}"}, {"pattern": "user:{owner_id}", "column": "owner"}],
  "indexes": [{"name": "by_owner", "columns": ["owner"]}]}]}`

// TestDecodedPushThroughTheEngine decodes the push-multi-commit vector,
// hands its payloads to sync.Store.Push on every driver unchanged, reads the
// rows back and re-encodes them: the bytes are the payloads (the codec's
// values are the engine's values, JSON text and non-BMP strings
// included). The IR also converts to a schema the engine compiles.
func TestDecodedPushThroughTheEngine(t *testing.T) {
	ir, err := ssp2.ParseSchema([]byte(notesIR))
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := ssp2.Compile(ir)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := ir.DriverSchema()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sync.CompileSchema(schema); err != nil {
		t.Fatalf("the engine refuses the converted schema: %v", err)
	}
	big, err := ssp2.ParseSchema([]byte(everyTypeIR))
	if err != nil {
		t.Fatal(err)
	}
	bigSchema, err := big.DriverSchema()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sync.CompileSchema(bigSchema); err != nil {
		t.Fatalf("the engine refuses the converted schema with every type: %v", err)
	}

	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { pushVector(t, e.open(t), schema, compiled) })
	}
}

func pushVector(t *testing.T, store *sync.Store, schema sync.Schema, compiled *ssp2.Compiled) {
	ctx := context.Background()
	if err := store.EnsureSchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(upstream.Vectors(t), "request", "push-multi-commit.bin"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := ssp2.DecodeRequest(bin)
	if err != nil {
		t.Fatal(err)
	}
	notes, _ := compiled.Table("notes")
	payloads := map[string][]byte{}
	for _, c := range req.Commits {
		pr := sync.PushRequest{ClientID: req.Header.ClientID, ClientCommitID: c.ClientCommitID, ActorID: "actor-1"}
		for _, op := range c.Operations {
			po := sync.PushOp{Table: op.Table, RowID: op.RowID, Op: op.Op.DriverOp()}
			if op.Op == ssp2.OpUpsert {
				if po.Values, err = notes.Codec.Decode(op.Payload); err != nil {
					t.Fatal(err)
				}
				payloads[op.RowID] = op.Payload
			}
			// The vector's baseVersion 3 targets a row this fresh store does
			// not have; push without a check.
			pr.Ops = append(pr.Ops, po)
		}
		res, err := store.Push(ctx, "tenant-1", pr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != sync.PushApplied {
			t.Fatalf("push %s: %+v", c.ClientCommitID, res.PushResult)
		}
	}
	for id, want := range payloads {
		row, ok, err := store.GetRow(ctx, "tenant-1", "notes", id)
		if err != nil || !ok {
			t.Fatalf("row %s: %v, %v", id, ok, err)
		}
		got, err := notes.Codec.Append(nil, row.Values)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("row %s re-encodes to\n %x\nnot the pushed payload\n %x", id, got, want)
		}
	}
}

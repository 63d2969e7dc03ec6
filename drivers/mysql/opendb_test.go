package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
	"github.com/syncstore/syncstore/internal/testlane"
	syncstore "github.com/syncstore/syncstore/sync"
)

// hostConfig returns the configuration a host gives its own *sql.DB for
// dsn's database: what OpenDB's doc lists (built here the way Open builds
// its own, so the two cannot drift).
func hostConfig(t testing.TB, dsn string) *mysql.Config {
	t.Helper()
	cfg, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	version, _, _, err := probeVersion(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newConn(cfg, version, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	return c.cfg
}

// hostDB opens the host's own pool of cfg, closed by t.Cleanup.
func hostDB(t conformance.T, cfg *mysql.Config) *sql.DB {
	t.Helper()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("connector: %v", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(16)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// hostDBCases: the suite's cases run over a host's *sql.DB, those that
// depend on how connections are made and held; SYNCSTORE_TEST_HOST_POOL_ALL=1
// runs every case.
var hostDBCases = regexp.MustCompile(`^TestConformanceOverHostDB($|/(TX-(1|2|6|8|10|11)|SEQ-4|VAL-1|PR-6|RX-3|AQ-4|ERR-3|SCAN-1|REG-3)/)`)

// TestConformanceOverHostDB runs the suite on Conns opened over a
// *sql.DB the host owns (OpenDB). A full lane: it runs under
// SYNCSTORE_TEST_FULL=1 (docs/testing.md).
func TestConformanceOverHostDB(t *testing.T) {
	testlane.RequireFull(t, "the suite's connection-bound cases again over a host's *sql.DB")
	all := os.Getenv("SYNCSTORE_TEST_HOST_POOL_ALL") == "1"
	base := testdb.MySQLServer(t)
	var cfgs gosync.Map // *Conn → *mysql.Config
	open := func(ct conformance.T, cfg *mysql.Config) driver.Conn {
		ct.Helper()
		c, err := OpenDB(ct.Context(), hostDB(ct, cfg), cfg)
		if err != nil {
			ct.Fatalf("OpenDB: %v", err)
		}
		ct.Cleanup(func() { _ = c.Close() })
		cfgs.Store(c, cfg)
		return c
	}
	h := conformance.Harness{
		Name: "mysql-host-db",
		Open: func(ct conformance.T) driver.Conn {
			ct.Helper()
			if !all && !hostDBCases.MatchString(ct.Name()) {
				ct.Skipf("not among the host-pool cases (SYNCSTORE_TEST_HOST_POOL_ALL=1 runs them all)")
			}
			dsn, drop, err := Driver{}.Provision(ct.Context(), base)
			if err != nil {
				ct.Fatalf("provision: %v", err)
			}
			ct.Cleanup(func() { _ = drop(context.Background()) })
			return open(ct, hostConfig(t, dsn))
		},
		Reopen: func(ct conformance.T, c driver.Conn) driver.Conn {
			cfg, ok := cfgs.Load(c)
			if !ok {
				ct.Fatalf("Reopen of a Conn this harness did not open")
			}
			return open(ct, cfg.(*mysql.Config))
		},
		Capabilities:       declaredCaps,
		ParallelPartitions: true,
		HostTable: func(ct conformance.T, conn driver.Conn) conformance.HostTable {
			return conformance.SQLHostTable(ct, conn, "CREATE TABLE host_notes (k VARCHAR(64) PRIMARY KEY) ENGINE=InnoDB")
		},
	}
	conformance.Run(t, h)
}

// Each parameter the store needs, left out of the host's DSN, fails
// OpenDB with invalid_argument naming it, and writes nothing.
func TestOpenDBChecksTheDSN(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.NewMySQL(t)
	good := hostConfig(t, dsn)
	isoVar := "transaction_isolation"
	if _, ok := good.Params["tx_isolation"]; ok {
		isoVar = "tx_isolation"
	}
	cases := []struct {
		name, want string
		edit       func(*mysql.Config)
	}{
		{"clientFoundRows off", "clientFoundRows=true", func(c *mysql.Config) { c.ClientFoundRows = false }},
		{"interpolateParams on", "interpolateParams=false", func(c *mysql.Config) { c.InterpolateParams = true }},
		{"multiStatements on", "multiStatements=false", func(c *mysql.Config) { c.MultiStatements = true }},
		{"default collation", "collation=", func(c *mysql.Config) {
			delete(c.Params, "collation_connection")
			c.Collation = "utf8mb4_general_ci"
		}},
		{"non-strict sql_mode", "sql_mode=", func(c *mysql.Config) { c.Params["sql_mode"] = "'NO_ENGINE_SUBSTITUTION'" }},
		{"repeatable read", isoVar + "='READ-COMMITTED'", func(c *mysql.Config) { c.Params[isoVar] = "'REPEATABLE-READ'" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good.Clone()
			tc.edit(cfg)
			_, err := OpenDB(ctx, hostDB(t, cfg), cfg)
			if driver.CodeOf(err) != driver.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("OpenDB = %v, want invalid_argument naming %q", err, tc.want)
			}
		})
	}
	other := good.Clone()
	other.DBName = "mysql"
	if _, err := OpenDB(ctx, hostDB(t, good), other); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("OpenDB with another database's config = %v, want invalid_argument", err)
	}
	if _, err := OpenDB(ctx, nil, good); driver.CodeOf(err) != driver.CodeInvalidArgument {
		t.Fatalf("OpenDB(nil) = %v, want invalid_argument", err)
	}
	// Only the multiStatements case can get past the checks of the
	// session before it; none of them created a table.
	var n int
	if err := hostDB(t, good).QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("tables after refused OpenDBs = %d, want 0", n)
	}
}

// Close leaves the host's *sql.DB open and rolls back the Conn's Txs;
// Store.As hands the *sql.DB back.
func TestOpenDBCloseLeavesTheDB(t *testing.T) {
	ctx := context.Background()
	cfg := hostConfig(t, testdb.NewMySQL(t))
	db := hostDB(t, cfg)
	c, err := OpenDB(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := syncstore.OpenConn(c)
	if err := store.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	var got *sql.DB
	if !store.As(&got) || got != db {
		t.Fatal("Store.As(**sql.DB) did not hand back the host's *sql.DB")
	}
	tx, err := store.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.UpsertRow(ctx, "todos", todoRow("t1", "p7", "o1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("the host's *sql.DB after Close: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM todos").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows of the Tx Close rolled back = %d, %v; want 0", n, err)
	}
	if st := db.Stats(); st.InUse != 0 {
		t.Fatalf("connections still in use after Close: %d", st.InUse)
	}
	if _, err := c.MaxCommitSeq(ctx, "p1"); !errors.Is(err, driver.ErrClosed) {
		t.Fatalf("MaxCommitSeq after Close = %v, want closed", err)
	}
}

// A Tx never needs a second connection (a statement not yet prepared on
// the pool is prepared on the Tx's own): over a host pool of ONE
// connection, pushes, claims and reads all go through. Before, the first
// push waited for a second connection until its context ended. OpenDB
// and EnsureSchema take two (a named lock's connection and one to work):
// the pool is cut to one after them.
func TestOpenDBOneConnection(t *testing.T) {
	cfg := hostConfig(t, testdb.NewMySQL(t))
	db := hostDB(t, cfg)
	db.SetMaxOpenConns(2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := OpenDB(ctx, db, cfg)
	if err != nil {
		t.Fatalf("OpenDB over one connection: %v", err)
	}
	defer c.Close()
	store := syncstore.OpenConn(c)
	if err := store.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for i := range 3 {
		err := store.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
			row := todoRow(fmt.Sprintf("t%d", i), "p7", "o1")
			if err := tx.UpsertRow(ctx, "todos", row); err != nil {
				return err
			}
			seq, err := tx.AppendCommit(ctx, driver.CommitInput{CreatedAtMs: 1, Changes: []driver.Change{{Table: "todos",
				RowID: row.ID, Op: driver.OpUpsert, Scopes: row.Scopes, Values: row.Values, RowVersion: 1}}})
			if err != nil {
				return err
			}
			return tx.EnqueueReactions(ctx, seq, []driver.ReactionInput{{Key: row.ID, Type: "x", Payload: "{}", MaxAttempts: 1, CreatedAtMs: 1}})
		})
		if err != nil {
			t.Fatalf("push %d over one connection: %v", i, err)
		}
	}
	rs, err := store.ClaimReactions(ctx, "p1", driver.ClaimRequest{Owner: "w", Types: []string{"x"}, NowMs: 10, LeaseMs: 1000, Limit: 10})
	if err != nil || len(rs) != 3 {
		t.Fatalf("claim over one connection: %d reactions, %v; want 3", len(rs), err)
	}
	if seq, err := store.MaxCommitSeq(ctx, "p1"); err != nil || seq != 3 {
		t.Fatalf("MaxCommitSeq = %d, %v; want 3", seq, err)
	}
}

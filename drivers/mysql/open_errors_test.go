package mysql

import (
	"context"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// TestOpenFailureCodes: a DSN that can never work is permanent
// (invalid_argument with the server's reason), an unreachable server is
// retryable: an unknown database or a refused login is never the
// retryable sync.storage.unavailable.
func TestOpenFailureCodes(t *testing.T) {
	server := testdb.MySQLServer(t)
	unknownDB, err := testdb.MySQLDSNFor(server, "syncstore_no_such_db_"+testdb.RandomName())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(unknownDB)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName, cfg.User, cfg.Passwd = "mysql", "syncstore_no_such_user", "wrong"
	badLogin := cfg.FormatDSN()
	cfg.Addr = testdb.RefusedAddr(t)
	testdb.CheckOpenFailures(t, Driver{}, []testdb.OpenFailure{
		{Name: "unknown database", DSN: unknownDB, Code: driver.CodeInvalidArgument, Reason: "Unknown database"},
		{Name: "bad login", DSN: badLogin, Code: driver.CodeInvalidArgument, Reason: "Access denied"},
		{Name: "nothing listening", DSN: cfg.FormatDSN(), Code: driver.CodeUnavailable, Reason: "connection refused"},
	})
}

// TestValueOverMaxAllowedPacket: a row or a logged change whose values
// cannot travel under the server's max_allowed_packet is refused before
// it is sent, as the permanent invalid_value, and the Tx stays usable.
// Before, the server dropped the connection and the write came back as
// the retryable sync.storage.unavailable ("bad connection").
func TestValueOverMaxAllowedPacket(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	big := todoRow("big", "p", "o")
	big.Values["title"] = strings.Repeat("x", c.maxPacket) // over the limit with any overhead
	tx, err := c.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := tx.UpsertRow(ctx, "todos", big); driver.CodeOf(err) != driver.CodeInvalidValue {
		t.Errorf("UpsertRow over max_allowed_packet: %v, want %s", err, driver.CodeInvalidValue)
	}
	_, err = tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "k1", Changes: []driver.Change{{
		Table: "todos", RowID: "big", Op: driver.OpUpsert, Scopes: big.Scopes, Values: big.Values, RowVersion: 1}}})
	if driver.CodeOf(err) != driver.CodeInvalidValue {
		t.Errorf("AppendCommit over max_allowed_packet: %v, want %s", err, driver.CodeInvalidValue)
	}
	// Nothing was sent: the Tx is still usable and a row that fits lands.
	small := todoRow("small", "p", "o")
	if err := tx.UpsertRow(ctx, "todos", small); err != nil {
		t.Fatalf("UpsertRow after the refusals: %v", err)
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "k2", Changes: []driver.Change{{
		Table: "todos", RowID: "small", Op: driver.OpUpsert, Scopes: small.Scopes, Values: small.Values, RowVersion: 1}}}); err != nil {
		t.Fatalf("AppendCommit after the refusals: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit after the refusals: %v", err)
	}
	for id, want := range map[string]bool{"small": true, "big": false} {
		if _, found, err := c.GetRow(ctx, "p1", "todos", id); err != nil || found != want {
			t.Errorf("row %s: found=%v err=%v, want found=%v", id, found, err, want)
		}
	}
}

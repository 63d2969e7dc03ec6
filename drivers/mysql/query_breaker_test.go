package mysql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestQueryQualifierCaseFolding: the qualifier check (AQ-2) compares the
// query's qualifiers with the databases the server shows. MariaDB's
// LOWER() and Go's strings.ToLower fold some letters differently (LOWER
// keeps U+1E9E ẞ, Go makes it ß), so both sides must be folded by the
// same function, or a database named with such a letter — spelled
// exactly, as the server's case-sensitive names need — passes the check
// and is read.
func TestQueryQualifierCaseFolding(t *testing.T) {
	c := openStore(t)
	ctx := context.Background()
	other := "aq_ẞX_" + strings.ToLower(strings.ReplaceAll(c.cfg.DBName, "-", "_"))
	if len(other) > 64 {
		other = other[:64]
	}
	if _, err := c.db.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(other)+" CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create the other database: %v", err)
	}
	t.Cleanup(func() { _, _ = c.db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+quoteIdent(other)) })
	for _, s := range []string{
		"CREATE TABLE " + quoteIdent(other) + ".`secret` (id VARCHAR(10))",
		"INSERT INTO " + quoteIdent(other) + ".`secret` VALUES ('leak')",
	} {
		if _, err := c.db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	pushRows(t, c, "p1", todoRow("t1", "alpha", "u1"))
	res, err := c.AuthoritativeQuery(ctx, "p1", driver.Query{
		SQL:    `SELECT t.id AS id, s.id AS s FROM todos t, "` + other + `".secret s`,
		Tables: []string{"todos"},
	})
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != driver.CodeQueryInvalid {
		t.Fatalf("a query reading database %q: got rows %v, error %v; want %s", other, res.Rows, err, driver.CodeQueryInvalid)
	}
}

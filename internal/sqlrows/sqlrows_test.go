package sqlrows

import (
	"database/sql"
	"errors"
	"slices"
	"testing"

	_ "modernc.org/sqlite"
)

func TestCollect(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	query := func() *sql.Rows {
		rows, err := db.Query(`SELECT 'a' UNION ALL SELECT 'b' UNION ALL SELECT 'c'`)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	got, err := Collect(query(), String)
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Collect = %v, %v; want [a b c]", got, err)
	}
	boom := errors.New("boom")
	n := 0
	got, err = Collect(query(), func(r *sql.Rows) (string, error) {
		if n++; n == 2 {
			return "", boom
		}
		return String(r)
	})
	if err != boom || got != nil || n != 2 {
		t.Fatalf("Collect with a failing scan = %v, %v after %d rows; want nil, boom after 2", got, err, n)
	}
	// The rows were closed: the single connection is free again.
	db.SetMaxOpenConns(1)
	if _, err := Collect(query(), String); err != nil {
		t.Fatal(err)
	}
}

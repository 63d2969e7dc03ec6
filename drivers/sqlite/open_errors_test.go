package sqlite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// TestOpenFailureCodes: a path that can never be opened as a store is
// permanent (invalid_argument, saying why), never the retryable
// unavailable: a missing directory, a directory and a non-database file
// are never sync.storage.unavailable or sync.storage.internal. (No-permission paths are refused the same way
// but cannot be shown when the tests run as root.)
func TestOpenFailureCodes(t *testing.T) {
	dir := t.TempDir()
	notADB := filepath.Join(dir, "notes.txt")
	text := make([]byte, 8192)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	if err := os.WriteFile(notADB, text, 0o644); err != nil {
		t.Fatal(err)
	}
	testdb.CheckOpenFailures(t, Driver{}, []testdb.OpenFailure{
		{Name: "missing directory", DSN: filepath.Join(dir, "no", "such", "dir", "s.db"),
			Code: driver.CodeInvalidArgument, Reason: "directory does not exist"},
		{Name: "missing directory file URI", DSN: "file:" + filepath.Join(dir, "nope", "s.db") + "?mode=rwc",
			Code: driver.CodeInvalidArgument, Reason: "directory does not exist"},
		{Name: "a directory", DSN: dir, Code: driver.CodeInvalidArgument, Reason: "names a directory"},
		{Name: "not a database", DSN: notADB, Code: driver.CodeInvalidArgument, Reason: "not an SQLite database"},
	})
	if _, err := os.Stat(filepath.Join(dir, "no")); !os.IsNotExist(err) {
		t.Errorf("a refused open created a directory: %v", err)
	}
}

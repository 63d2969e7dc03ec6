package server

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", for SQLite images
)

// The SQLite image's fixed names (SPEC §5.3).
const (
	imageVersionColumn = "_syncular_version"
	imageMetaTable     = "_syncular_segment"
)

// imageBuilder builds one SQLite image (SPEC §5.3) in a temporary file,
// page by page: the whole table snapshot never sits in memory, only
// SQLite's page cache and one page of rows.
type imageBuilder struct {
	t     *table
	dir   string
	path  string
	db    *sql.DB
	tx    *sql.Tx
	ins   *sql.Stmt
	rows  int64
	args  []any
	stats *stats
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqlAffinity is §5.3's declared type of a column.
func sqlAffinity(t ssp2.ColumnType) string {
	switch t {
	case ssp2.TypeInteger, ssp2.TypeBoolean:
		return "INTEGER"
	case ssp2.TypeFloat:
		return "REAL"
	case ssp2.TypeBytes, ssp2.TypeCRDT:
		return "BLOB"
	}
	return "TEXT" // string, json, blob_ref
}

// newImageBuilder creates the image's file in dir ("" = os.TempDir) with
// the data table of t and the metadata table.
func newImageBuilder(t *table, dir string, st *stats) (*imageBuilder, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	d, err := os.MkdirTemp(dir, "ssp2-image-*")
	if err != nil {
		return nil, fmt.Errorf("server: sqlite image: %w", err)
	}
	raise(&st.peakImages, st.liveImages.Add(1))
	b := &imageBuilder{t: t, dir: d, path: filepath.Join(d, "image.sqlite"), stats: st}
	if err := b.open(); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *imageBuilder) open() error {
	db, err := sql.Open("sqlite", "file:"+b.path+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		return fmt.Errorf("server: sqlite image: %w", err)
	}
	db.SetMaxOpenConns(1)
	b.db = db
	var cols []string
	for _, c := range b.t.Columns {
		def := quoteIdent(c.Name) + " " + sqlAffinity(c.Type)
		if !c.Nullable {
			def += " NOT NULL"
		}
		if c.Name == b.t.PrimaryKey {
			def += " PRIMARY KEY"
		}
		cols = append(cols, def)
	}
	cols = append(cols, quoteIdent(imageVersionColumn)+" INTEGER NOT NULL")
	stmts := []string{
		"CREATE TABLE " + quoteIdent(b.t.Name) + " (" + strings.Join(cols, ", ") + ")",
		`CREATE TABLE ` + imageMetaTable + ` (format INTEGER NOT NULL, "table" TEXT NOT NULL, "schemaVersion" INTEGER NOT NULL, "asOfCommitSeq" INTEGER NOT NULL, "scopeDigest" TEXT NOT NULL, "rowCount" INTEGER NOT NULL)`,
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("server: sqlite image: %w", err)
		}
	}
	if b.tx, err = db.Begin(); err != nil {
		return fmt.Errorf("server: sqlite image: %w", err)
	}
	names := make([]string, 0, len(b.t.Columns)+1)
	for _, c := range b.t.Columns {
		names = append(names, quoteIdent(c.Name))
	}
	names = append(names, quoteIdent(imageVersionColumn))
	q := "INSERT INTO " + quoteIdent(b.t.Name) + " (" + strings.Join(names, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(names)-1) + ")"
	if b.ins, err = b.tx.Prepare(q); err != nil {
		return fmt.Errorf("server: sqlite image: %w", err)
	}
	b.args = make([]any, len(names))
	return nil
}

// add inserts one page of rows (§5.3 cell encodings: booleans 0/1, json as
// its raw text, NULL for null, the server version last).
func (b *imageBuilder) add(rows []sync.Row) error {
	for _, r := range rows {
		for i, c := range b.t.Columns {
			v := r.Values[c.Name]
			switch x := v.(type) {
			case bool:
				if x {
					v = int64(1)
				} else {
					v = int64(0)
				}
			case sync.JSON:
				v = string(x)
			case []byte:
				if x == nil {
					v = nil
				}
			}
			b.args[i] = v
		}
		b.args[len(b.t.Columns)] = r.ServerVersion
		if _, err := b.ins.Exec(b.args...); err != nil {
			return fmt.Errorf("server: sqlite image: %w", err)
		}
		b.rows++
	}
	return nil
}

// finish writes the metadata row, closes the database and returns the
// image file open for reading with its content address and size.
func (b *imageBuilder) finish(schemaVersion int32, asOf int64, digest string) (*os.File, ssp2.SegmentInfo, error) {
	fail := func(err error) (*os.File, ssp2.SegmentInfo, error) {
		return nil, ssp2.SegmentInfo{}, fmt.Errorf("server: sqlite image: %w", err)
	}
	if _, err := b.tx.Exec(`INSERT INTO `+imageMetaTable+` VALUES (1, ?, ?, ?, ?, ?)`, b.t.Name, int64(schemaVersion), asOf, digest, b.rows); err != nil {
		return fail(err)
	}
	_ = b.ins.Close()
	if err := b.tx.Commit(); err != nil {
		return fail(err)
	}
	b.tx = nil
	if err := b.db.Close(); err != nil {
		return fail(err)
	}
	b.db = nil
	f, err := os.Open(b.path)
	if err != nil {
		return fail(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return fail(err)
	}
	return f, ssp2.SegmentInfo{ID: "sha256:" + hex.EncodeToString(h.Sum(nil)), ByteLength: n, RowCount: b.rows}, nil
}

// close releases everything and removes the temporary file.
func (b *imageBuilder) close() {
	if b.tx != nil {
		_ = b.tx.Rollback()
	}
	if b.db != nil {
		_ = b.db.Close()
	}
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
		b.dir = ""
		b.stats.liveImages.Add(-1)
	}
}

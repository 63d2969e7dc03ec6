// Package sqlite is the embedded syncstore driver over modernc.org/sqlite
// (pure Go, no cgo). Import it for its side effect and open a store by
// name:
//
//	import _ "github.com/syncstore/syncstore/drivers/sqlite"
//	store, err := sync.Open("sqlite", "/var/lib/app/sync.db")
//
// # DSN
//
//   - a file path ("sync.db", "/var/lib/app/sync.db"); a "?" starts
//     modernc.org/sqlite parameters, as in that driver;
//   - a "file:" URI ("file:sync.db?mode=rwc"), passed to SQLite as a URI;
//   - ":memory:" (also "file::memory:" and any URI with mode=memory): a
//     private store that lives only as long as the Conn. It is NOT an
//     in-memory database: a writer and a pool of readers must share one
//     database, and a shared-cache in-memory database would put readers
//     and the writer under one table lock (a reader could then see or block
//     on an open transaction, TX-4). It is a temporary file in a private
//     directory under os.TempDir, removed by Close.
//
// One parameter is the driver's own: _busy_timeout=MS (alias _timeout, as
// in modernc.org/sqlite and mattn/go-sqlite3), how long a write waits for
// the store's write lock while another Conn or process holds it: 0…
// 2147483647 ms, default 10000 (10 s). Every write takes that lock (Begin,
// Conn-level writes, EnsureSchema; reads never wait for it). When the wait
// runs out, the write fails with CodeUnavailable (retryable), "the store
// is busy: another connection or process holds its write lock", and
// nothing was written. A ctx that ends first ends the wait first. Any
// other value, both keys, or _pragma=busy_timeout(…) → CodeInvalidArgument.
//
// # How the contract is met
//
//   - WAL journal, synchronous=NORMAL: a committed
//     transaction survives a process crash; after a power loss or OS crash
//     the last transactions before it may be lost (never half of one).
//   - The writer checkpoints the WAL every 8,192 pages (32 MiB; SQLite's
//     default is 1,000) and keeps an 8 MiB page cache, so the cost of a
//     push stops growing once the indexes are warm, after about 2,000
//     W1 commits (docs/performance.md, "Known limits").
//   - One writer connection (a *sql.DB with one connection, every
//     transaction BEGIN IMMEDIATE) carries every write, Conn-level ones
//     included (PutClientRecord, SetHorizonSeq, TouchPartition, …), so every
//     Tx is serialized against every other Tx of the store, across
//     processes too (TX-1; transactions of different partitions therefore
//     wait for each other: SQLite has one writer). A Conn-level write (or
//     EnsureSchema) waits while any Tx of the store is open; made from the
//     goroutine that holds that Tx, it waits until its own context ends.
//   - The Conn's writes take the writer through a gate that picks the
//     next one at random, as database/sql would, and concurrent
//     PutClientRecord calls share one writer transaction, which the gate
//     weighs as many writes as the records it carries (writergate.go,
//     recordbatch.go): under concurrent pushes a pull's record no longer
//     takes a turn of its own at the writer.
//   - A pool of query_only reader connections serves every read outside a
//     Tx: they see committed data only (TX-4, SEQ-6).
//   - A cancelled Begin context rolls the Tx back and frees the writer (TX-6).
//   - A SAVEPOINT opened right after BEGIN lets CommitRejected discard the
//     staged writes and store the rejected result without releasing the
//     write lock (TX-8); a failed statement (unique collision) is rolled
//     back alone and leaves the Tx usable.
//   - Statements are prepared once per Conn (per table after EnsureSchema)
//     and reused inside transactions with Tx.StmtContext.
//   - A push is written with few statements: upserts of a table without a
//     unique index are staged and written as one multi-row upsert before
//     the Tx's next operation, and a commit's changes and change-scope
//     entries are multi-row inserts (stage.go; docs/performance.md).
//
// # Why the store owns its connections
//
// A SQLite store is opened from a path, never over a host's *sql.DB: its
// correctness rests on how its connections are made — exactly one writer
// connection (every write, BEGIN IMMEDIATE, the WAL checkpoint policy)
// and a pool of query_only readers, each with its pragmas — which a
// borrowed pool could not guarantee (a second writer would turn TX-1's
// serialization into "database is locked" failures). A host that wants
// tables of its own in the same file writes them atomically with a push
// through Tx.As (a **sql.Tx target, TX-11), or opens the file itself for
// its own reads.
//
// The SQL lives in internal/sqlitesql, shared with the D1 driver; the
// portable query language is internal/querylang's.
package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"
)

// init registers the driver as "sqlite": sync.Open("sqlite", dsn).
func init() { syncstore.Register("sqlite", Driver{}) }

// Driver opens SQLite stores. The zero value is ready to use and safe for
// concurrent use. It implements driver.Driver and driver.Provisioner.
type Driver struct{}

var (
	_ driver.Driver      = Driver{}
	_ driver.Provisioner = Driver{}
)

// Push-path tuning of the writer (docs/performance.md, "Known
// limits"). Every commit dirties one leaf page per
// insertion point of each index it writes (~60 scattered 4 KiB pages for
// a 10-row commit), and each is written to the WAL as a full frame; a
// checkpoint then copies every distinct page of the WAL into the database
// file and fsyncs it. With SQLite's default of a checkpoint every 1,000
// frames (about every 15 such commits) nearly every frame is copied again,
// and the fsyncs land on an ever larger file.
const (
	// walCheckpointPages is the WAL size, in pages (4 KiB each: 32 MiB),
	// at which a commit runs a passive checkpoint: about 100 commits'
	// worth, so the hot index leaves each commit rewrites are copied once
	// per checkpoint instead of once per commit. The WAL file stays at
	// about this size on disk between checkpoints; a crash recovers from
	// at most this much WAL.
	walCheckpointPages = "8192"
	// writerCacheKiB is the writer's page cache, as SQLite's negative
	// cache_size (KiB: 8 MiB, allocated as pages are used), so the
	// interior pages and hot leaves of every index the push path writes
	// stay cached as the store grows (default 2 MiB).
	writerCacheKiB = "-8192"
)

// defaultBusyTimeoutMs is the write-lock wait of a DSN without
// _busy_timeout (see the package doc).
const defaultBusyTimeoutMs = 10000

// Open opens (creating if needed) the store at dsn (see the package doc),
// creates the infrastructure tables and returns a Conn safe for
// concurrent use. Errors: CodeInvalidArgument for an empty DSN,
// CodeUnavailable when the database cannot be opened or initialized
// within ctx.
func (Driver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	c, err := open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// target is a parsed DSN: the SQLite URI (without our parameters), the
// user's parameters, the private directory of a ":memory:" store and the
// write-lock wait (ms).
type target struct {
	uri    string
	path   string // the database file's path, "" when unknown (a file: URI)
	params url.Values
	tmpDir string
	busyMs int
}

func parseDSN(dsn string) (target, error) {
	if strings.TrimSpace(dsn) == "" {
		return target{}, driver.Errorf(driver.CodeInvalidArgument, "sqlite: empty DSN")
	}
	base, query, _ := strings.Cut(dsn, "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return target{}, driver.Errorf(driver.CodeInvalidArgument, "sqlite: malformed DSN parameters")
	}
	busyMs, err := busyTimeout(params)
	if err != nil {
		return target{}, err
	}
	if base == ":memory:" || base == "file::memory:" || params.Get("mode") == "memory" {
		dir, err := os.MkdirTemp("", "syncstore-sqlite-mem-")
		if err != nil {
			return target{}, driver.Wrap(driver.CodeUnavailable, err, "sqlite: create the private directory of a :memory: store")
		}
		return target{uri: fileURI(filepath.Join(dir, "store.db")), params: url.Values{}, tmpDir: dir, busyMs: busyMs}, nil
	}
	if strings.HasPrefix(base, "file:") {
		t := target{uri: base, params: params, busyMs: busyMs}
		if u, err := url.Parse(base); err == nil && filepath.IsAbs(filepath.FromSlash(u.Path)) {
			t.path = filepath.FromSlash(u.Path)
		}
		return t, nil
	}
	abs, err := filepath.Abs(base)
	if err != nil {
		return target{}, driver.Wrap(driver.CodeInvalidArgument, err, "sqlite: resolve the database path")
	}
	return target{uri: fileURI(abs), path: abs, params: params, busyMs: busyMs}, nil
}

// busyTimeout takes the write-lock wait out of params (_busy_timeout or
// its alias _timeout, in ms; see the package doc) and returns it, or the
// default. The wait is applied by the driver's own busy_timeout pragma,
// so a second way to set it is refused rather than silently overridden.
func busyTimeout(params url.Values) (int, error) {
	for _, p := range params["_pragma"] {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout") {
			return 0, driver.Errorf(driver.CodeInvalidArgument, "sqlite: set the write-lock wait with _busy_timeout=MS, not _pragma=busy_timeout")
		}
	}
	var key string
	for _, k := range []string{"_busy_timeout", "_timeout"} {
		if _, ok := params[k]; !ok {
			continue
		}
		if key != "" {
			return 0, driver.Errorf(driver.CodeInvalidArgument, "sqlite: give the write-lock wait once: _busy_timeout or _timeout, not both")
		}
		key = k
	}
	if key == "" {
		return defaultBusyTimeoutMs, nil
	}
	vals := params[key]
	params.Del(key)
	ms, err := strconv.ParseInt(vals[0], 10, 32)
	if len(vals) != 1 || err != nil || ms < 0 {
		return 0, driver.Errorf(driver.CodeInvalidArgument, "sqlite: %s must be one whole number of milliseconds, 0…2147483647", key)
	}
	return int(ms), nil
}

// fanKey names the store's file for the in-process fanout hub: its
// absolute path when known, else the URI without parameters.
func (t target) fanKey() string {
	if t.path != "" {
		return t.path
	}
	base, _, _ := strings.Cut(t.uri, "?")
	return base
}

// fileURI turns an absolute path into a SQLite file URI, escaping '?',
// '#' and '%' so they stay part of the path.
func fileURI(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// dsnFor returns the modernc DSN of the writer (writer=true) or of a reader.
// Our parameters come first: modernc reads the first value of a key, so
// they win over a user's duplicate.
func (t target) dsnFor(writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(t.busyMs)+")")
	if writer {
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Add("_pragma", "cache_size("+writerCacheKiB+")")
		q.Add("_pragma", "wal_autocheckpoint("+walCheckpointPages+")")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	s := q.Encode()
	if len(t.params) > 0 {
		s += "&" + t.params.Encode()
	}
	return t.uri + "?" + s
}

// Provision creates a fresh, empty store for tests (driver.Provisioner):
// baseDSN "" puts it in a new directory under os.TempDir; baseDSN naming an
// existing directory puts it in a new directory inside that one. It
// returns the database file's path as the DSN, and drop removes the
// directory with the database and its -wal and -shm files. Any other
// baseDSN → CodeInvalidArgument.
func (Driver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	parent := baseDSN
	if parent != "" {
		fi, err := os.Stat(parent)
		if err != nil || !fi.IsDir() {
			return "", nil, driver.Errorf(driver.CodeInvalidArgument, "sqlite: Provision needs an existing directory or \"\" as base DSN")
		}
	}
	dir, err := os.MkdirTemp(parent, "syncstore-sqlite-")
	if err != nil {
		return "", nil, driver.Wrap(driver.CodeUnavailable, err, "sqlite: create a store directory")
	}
	drop := func(context.Context) error {
		if err := os.RemoveAll(dir); err != nil {
			return driver.Wrap(driver.CodeInternal, err, "sqlite: remove a provisioned store")
		}
		return nil
	}
	return filepath.Join(dir, "store.db"), drop, nil
}

// openDB opens a database/sql handle on dsn sized for its role.
func openDB(dsn string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

package sqliteengine

import (
	"bytes"
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A linear instr (AQ-6).
//
// SQLite's built-in instr(X, Y) is a naive search: at every character of
// X it compares Y (memcmp), so one call costs O(len(X)·len(Y)). The
// interrupt (and the progress handler) is checked between VDBE opcodes,
// never inside a function call: instr over a stored 'a'×1,000,000 and a
// needle of 'a'×500,000+'b' ran 4.9 s under a 1 s Timeout. The query
// connections of drivers/sqlite and the d1http schema twin therefore
// replace it, per connection (sqlite3_create_function with the same name
// and argument count overrides the built-in on that connection only), by
// instrFunc: SQLite's own code for the argument conversions, NULLs and
// the result, with the search done by a linear-time algorithm, so one
// call is O(len(X)+len(Y)) and the values are bounded by
// SQLITE_LIMIT_LENGTH (MaxValueBytes).

// OpenDB opens a database/sql pool on dsn whose every connection has the
// linear instr (RegisterLinearInstr). It uses a modernc.org/sqlite Driver
// of its own: the process's "sqlite" driver, and so the application's
// other SQLite connections, keep the built-in.
func OpenDB(dsn string) *sql.DB {
	return sql.OpenDB(connector{dsn})
}

// queryDriver is the private modernc.org/sqlite driver of OpenDB.
var queryDriver = func() *sqlite.Driver {
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error { return RegisterLinearInstr(c) })
	return d
}()

type connector struct{ dsn string }

func (c connector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return queryDriver.Open(c.dsn)
}

func (c connector) Driver() sqldriver.Driver { return queryDriver }

// RegisterLinearInstr overrides instr(X, Y) on the modernc.org/sqlite
// driver connection dc (a connection hook's or conn.Raw's argument) by
// instrFunc. It must not run while a statement of dc is active.
func RegisterLinearInstr(dc any) error {
	db, err := handle(dc)
	if err != nil {
		return err
	}
	tls := libc.NewTLS()
	defer tls.Close()
	name, err := libc.CString("instr")
	if err != nil {
		return err
	}
	defer libc.Xfree(tls, name)
	rc := sqlite3.Xsqlite3_create_function(tls, db, name, 2,
		sqlite3.SQLITE_UTF8|sqlite3.SQLITE_DETERMINISTIC|sqlite3.SQLITE_INNOCUOUS, 0, cFuncPointer(instrFunc), 0, 0)
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqliteengine: register instr: SQLite result code %d", rc)
	}
	return nil
}

// cFuncPointer is a Go function as the C function pointer the transpiled
// engine calls (as modernc.org/sqlite makes its own; f must be a
// top-level function).
func cFuncPointer[T any](f T) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f}))
}

// cPointer is p, an address in the engine's C memory (never Go's heap:
// the garbage collector neither moves nor frees it), as an unsafe.Pointer.
func cPointer(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// instrFunc is SQLite's instrFunc (func.c) with a linear search: NULL when
// either argument is NULL; 1 for an empty needle; for two blobs a byte
// position, else the character position of the first occurrence in the
// text of both (a number is converted as SQLite converts it; a blob next
// to a text is read as text), 0 when there is none.
func instrFunc(tls *libc.TLS, ctx uintptr, argc int32, argv uintptr) {
	_ = argc
	a0 := *(*uintptr)(cPointer(argv))
	a1 := *(*uintptr)(cPointer(argv + unsafe.Sizeof(uintptr(0))))
	typeHaystack := sqlite3.Xsqlite3_value_type(tls, a0)
	typeNeedle := sqlite3.Xsqlite3_value_type(tls, a1)
	if typeHaystack == sqlite3.SQLITE_NULL || typeNeedle == sqlite3.SQLITE_NULL {
		return
	}
	nHaystack := sqlite3.Xsqlite3_value_bytes(tls, a0)
	nNeedle := sqlite3.Xsqlite3_value_bytes(tls, a1)
	n := int32(1)
	if nNeedle > 0 {
		var zHaystack, zNeedle, pC1, pC2 uintptr
		defer func() {
			sqlite3.Xsqlite3_value_free(tls, pC1)
			sqlite3.Xsqlite3_value_free(tls, pC2)
		}()
		isText := true
		switch {
		case typeHaystack == sqlite3.SQLITE_BLOB && typeNeedle == sqlite3.SQLITE_BLOB:
			zHaystack = sqlite3.Xsqlite3_value_blob(tls, a0)
			zNeedle = sqlite3.Xsqlite3_value_blob(tls, a1)
			isText = false
		case typeHaystack != sqlite3.SQLITE_BLOB && typeNeedle != sqlite3.SQLITE_BLOB:
			zHaystack = sqlite3.Xsqlite3_value_text(tls, a0)
			zNeedle = sqlite3.Xsqlite3_value_text(tls, a1)
		default:
			pC1 = sqlite3.Xsqlite3_value_dup(tls, a0)
			if zHaystack = sqlite3.Xsqlite3_value_text(tls, pC1); zHaystack == 0 {
				sqlite3.Xsqlite3_result_error_nomem(tls, ctx)
				return
			}
			nHaystack = sqlite3.Xsqlite3_value_bytes(tls, pC1)
			pC2 = sqlite3.Xsqlite3_value_dup(tls, a1)
			if zNeedle = sqlite3.Xsqlite3_value_text(tls, pC2); zNeedle == 0 {
				sqlite3.Xsqlite3_result_error_nomem(tls, ctx)
				return
			}
			nNeedle = sqlite3.Xsqlite3_value_bytes(tls, pC2)
		}
		if zNeedle == 0 || nHaystack != 0 && zHaystack == 0 {
			sqlite3.Xsqlite3_result_error_nomem(tls, ctx)
			return
		}
		var haystack []byte
		if nHaystack > 0 {
			haystack = unsafe.Slice((*byte)(cPointer(zHaystack)), int(nHaystack))
		}
		needle := unsafe.Slice((*byte)(cPointer(zNeedle)), int(nNeedle))
		n = int32(InstrPosition(haystack, needle, isText))
	}
	sqlite3.Xsqlite3_result_int(tls, ctx, n)
}

// InstrPosition is the position SQLite's instr gives needle (non-empty) in
// haystack: 1 + the number of steps before the first occurrence that
// starts on a step, 0 when none does. A step is one byte for blobs
// (isText false); for text it is one byte and the UTF-8 continuation bytes
// (10xxxxxx) after it, so an occurrence starting on a continuation byte
// (only a needle that begins with one has such) is passed over. Time
// O(len(haystack)+len(needle)).
func InstrPosition(haystack, needle []byte, isText bool) int {
	if len(needle) == 0 {
		return 1
	}
	onStep := func(q int) bool { return !isText || q == 0 || haystack[q]&0xc0 != 0x80 }
	position := func(q int) int {
		if !isText {
			return q + 1
		}
		if q == 0 {
			return 1
		}
		steps := 1 // the step from 0
		for _, b := range haystack[1:q] {
			if b&0xc0 != 0x80 {
				steps++
			}
		}
		return steps + 1
	}
	if len(needle) <= 64 {
		// bytes.Index of a needle this short compares at most 64 bytes per
		// haystack byte (brute force with vector instructions): linear.
		for from := 0; from+len(needle) <= len(haystack); {
			i := bytes.Index(haystack[from:], needle)
			if i < 0 {
				return 0
			}
			if q := from + i; onStep(q) {
				return position(q)
			}
			from += i + 1
		}
		return 0
	}
	// Knuth–Morris–Pratt: every occurrence in order, in linear time
	// whatever the input (bytes.Index falls back to Rabin–Karp, whose
	// worst case is O(n·m)).
	fail := make([]int32, len(needle))
	for i, k := 1, int32(0); i < len(needle); i++ {
		for k > 0 && needle[i] != needle[k] {
			k = fail[k-1]
		}
		if needle[i] == needle[k] {
			k++
		}
		fail[i] = k
	}
	k := int32(0)
	for i, b := range haystack {
		for k > 0 && b != needle[k] {
			k = fail[k-1]
		}
		if b == needle[k] {
			k++
		}
		if int(k) == len(needle) {
			if q := i + 1 - len(needle); onStep(q) {
				return position(q)
			}
			k = fail[k-1]
		}
	}
	return 0
}

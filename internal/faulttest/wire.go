package faulttest

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// framer splits a client's byte stream into messages and says which
// message completes a COMMIT request.
type framer interface {
	// next returns the size of the first complete message of b (0 when b
	// holds none yet) and whether a COMMIT request ends with it.
	next(b []byte) (size int, commit bool)
}

func newFramer(p Protocol) framer {
	if p == MySQLWire {
		return mysqlFramer{}
	}
	return &pgFramer{startup: true, stmts: map[string]string{}, portals: map[string]string{}}
}

// isCommitSQL reports whether q is a COMMIT statement.
func isCommitSQL(q string) bool {
	q = strings.ToUpper(strings.TrimRight(strings.TrimSpace(q), "; \t\n"))
	return q == "COMMIT" || q == "END" || q == "COMMIT WORK"
}

// mysqlFramer frames client packets (3-byte little-endian length, 1-byte
// sequence id, payload). A COMMIT is a COM_QUERY (0x03) of "COMMIT".
type mysqlFramer struct{}

func (mysqlFramer) next(b []byte) (int, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n := 4 + int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16)
	if len(b) < n {
		return 0, false
	}
	payload := b[4:n]
	return n, len(payload) > 1 && payload[0] == 0x03 && isCommitSQL(string(payload[1:]))
}

// pgFramer frames PostgreSQL frontend messages: untyped ones (SSL and
// GSS requests, the startup message) until the startup message, then
// typed ones (1-byte type, 4-byte big-endian length including itself).
// The server executes each Execute as it arrives, so an extended-protocol
// pipeline (Parse, Bind, Describe, Execute, Close … up to its Sync or
// Flush) is one unit: it completes a COMMIT request when it executes a
// statement parsed from COMMIT. A simple Query "COMMIT" is one by itself.
type pgFramer struct {
	startup bool
	stmts   map[string]string // prepared statement name → text
	portals map[string]string // portal → statement text
}

const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
)

func (f *pgFramer) next(b []byte) (int, bool) {
	if f.startup {
		if len(b) < 8 {
			return 0, false
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < n {
			return 0, false
		}
		if code := binary.BigEndian.Uint32(b[4:]); code != pgSSLRequest && code != pgGSSENCRequest {
			f.startup = false
		}
		return n, false
	}
	// Replaying a unit whose end has not arrived yet repeats the same
	// map updates, which is harmless.
	commit := false
	for off := 0; ; {
		if len(b)-off < 5 {
			return 0, false
		}
		n := 1 + int(binary.BigEndian.Uint32(b[off+1:]))
		if len(b)-off < n {
			return 0, false
		}
		typ, body := b[off], b[off+5:off+n]
		off += n
		switch typ {
		case 'P': // Parse: name, query, …
			name, rest := cstring(body)
			query, _ := cstring(rest)
			f.stmts[name] = query
		case 'B': // Bind: portal, statement, …
			portal, rest := cstring(body)
			stmt, _ := cstring(rest)
			f.portals[portal] = f.stmts[stmt]
		case 'E': // Execute: portal, max rows
			portal, _ := cstring(body)
			commit = commit || isCommitSQL(f.portals[portal])
		case 'C': // Close: 'S' statement or 'P' portal, name
			if len(body) > 0 {
				name, _ := cstring(body[1:])
				if body[0] == 'S' {
					delete(f.stmts, name)
				} else {
					delete(f.portals, name)
				}
			}
		case 'D': // Describe
		case 'S', 'H': // Sync, Flush: the pipeline goes out
			return off, commit
		case 'Q': // simple Query
			if off == n {
				q, _ := cstring(body)
				return n, isCommitSQL(q)
			}
			return off - n, commit
		default: // a message of its own (password, Terminate, …)
			if off == n {
				return n, false
			}
			return off - n, commit
		}
	}
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

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
// typed ones (1-byte type, 4-byte big-endian length including itself). It
// follows Parse, Bind and Execute so it knows which pipeline executes a
// statement whose text is COMMIT; that pipeline's Sync completes the
// COMMIT request. A simple Query "COMMIT" completes one by itself.
type pgFramer struct {
	startup bool
	stmts   map[string]string // prepared statement name → text
	portals map[string]string // portal → statement text
	commit  bool              // the pipeline since the last Sync executes a COMMIT
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
	if len(b) < 5 {
		return 0, false
	}
	n := 1 + int(binary.BigEndian.Uint32(b[1:]))
	if len(b) < n {
		return 0, false
	}
	body := b[5:n]
	switch b[0] {
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
		if isCommitSQL(f.portals[portal]) {
			f.commit = true
		}
	case 'C': // Close: 'S' statement or 'P' portal, name
		if len(body) > 0 {
			name, _ := cstring(body[1:])
			if body[0] == 'S' {
				delete(f.stmts, name)
			} else {
				delete(f.portals, name)
			}
		}
	case 'S': // Sync: ends the pipeline
		commit := f.commit
		f.commit = false
		return n, commit
	case 'Q': // simple Query
		q, _ := cstring(body)
		return n, isCommitSQL(q)
	}
	return n, false
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

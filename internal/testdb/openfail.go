package testdb

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// OpenFailure is a DSN that must not open and how Open must fail
// (the table of docs/reliability.md "Open failures"):
// with Code, which says truthfully whether a retry can help, and with a
// message that keeps the engine's or the system's reason (Reason, a
// substring).
type OpenFailure struct {
	Name, DSN string
	Code      driver.Code
	Reason    string
}

// CheckOpenFailures opens every case with d and fails t for each whose
// error is nil, of another code, or without its reason. A store that
// opens is closed.
func CheckOpenFailures(t *testing.T, d driver.Driver, cases []OpenFailure) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			conn, err := d.Open(ctx, c.DSN)
			if err == nil {
				_ = conn.Close()
				t.Fatalf("Open succeeded; want %s", c.Code)
			}
			if got := driver.CodeOf(err); got != c.Code {
				t.Fatalf("code %q, want %q (retryable %v): %v", got, c.Code, c.Code.Retryable(), err)
			}
			if !strings.Contains(err.Error(), c.Reason) {
				t.Fatalf("the message lost the reason %q: %v", c.Reason, err)
			}
		})
	}
}

// RefusedAddr returns "127.0.0.1:PORT" of a loopback port that nothing
// listens on (one just closed): a connection to it is refused.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

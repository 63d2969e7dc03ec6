package d1http

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// dropTransport is an http.RoundTripper that, once armed, sends the next
// commit batch (the one that carries the partition's stamp guard) and
// drops its answer, then fails the next cut requests (cut < 0: every
// request until restore), as a network that drops after the batch landed.
type dropTransport struct {
	base http.RoundTripper

	mu    gosync.Mutex
	armed bool
	fired bool
	cut   int // for the armed fault
	fail  int // requests still to fail (< 0: all)
}

var errDropped = errors.New("dropTransport: connection reset")

// commitMarker is in a commit batch's body, and in no other request's.
var commitMarker = []byte("INSERT INTO _sync_d1_stamps")

func (d *dropTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	d.mu.Lock()
	if d.fail != 0 {
		if d.fail > 0 {
			d.fail--
		}
		d.mu.Unlock()
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, errDropped
	}
	armed := d.armed
	d.mu.Unlock()
	if armed && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, commitMarker) {
			d.mu.Lock()
			d.armed, d.fired = false, true
			cut := d.cut
			d.mu.Unlock()
			resp, err := d.base.RoundTrip(r)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			d.mu.Lock()
			d.fail = cut
			d.mu.Unlock()
			return nil, errDropped
		}
	}
	return d.base.RoundTrip(r)
}

// TestPushSettleFaults: a push whose commit batch lands, its answer
// dropped and every later request failing (or the next few), never
// answers an error that says nothing was written (OUT-1,
// faulttest.PushSettle).
func TestPushSettleFaults(t *testing.T) {
	defer func(d time.Duration) { outcomeLookupTimeout = d }(outcomeLookupTimeout)
	outcomeLookupTimeout = 500 * time.Millisecond // the fence fails as surely, sooner
	srv, _ := newDouble(t)
	dsn, _, err := Driver{}.Provision(context.Background(), "d1://acct?token="+testToken+"&endpoint="+srv.URL+"&request_timeout_ms=300")
	if err != nil {
		t.Fatal(err)
	}
	dt := &dropTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	conn, err := OpenWith(context.Background(), dsn, Options{HTTPClient: &http.Client{Transport: dt}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(context.Background(), conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	tg := faulttest.SettleTarget{Conn: conn, Schema: conformance.TestSchema(),
		Arm: func(cut int) func() bool {
			dt.mu.Lock()
			dt.armed, dt.fired, dt.cut = true, false, cut
			dt.mu.Unlock()
			return func() bool {
				dt.mu.Lock()
				defer dt.mu.Unlock()
				return dt.fired
			}
		},
		Restore: func() {
			dt.mu.Lock()
			dt.armed, dt.fail = false, 0
			dt.mu.Unlock()
		}}
	faulttest.PushSettle(t, tg, faulttest.SettleSeeds(), time.Second)
}

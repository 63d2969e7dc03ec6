package d1test

import (
	"net"
	"net/http"
	"strconv"
	gosync "sync"
	"time"
)

// FaultKind is a failure the double injects into a query request.
type FaultKind int

// The injectable faults.
const (
	// Fault429 answers 429 Too Many Requests with a Retry-After header (in
	// seconds, Fault.RetryAfter) and a JSON error; nothing is applied.
	Fault429 FaultKind = iota + 1
	// Fault500 answers 500 with an HTML body (as Cloudflare's edge does);
	// nothing is applied.
	Fault500
	// FaultTimeout holds the request without applying it until the
	// client gives up or Fault.Delay passes (then 504 with an HTML body).
	FaultTimeout
	// FaultTimeoutAfter applies the batch, then holds the answer until the
	// client gives up or Fault.Delay passes (then answers normally).
	FaultTimeoutAfter
	// FaultResetBefore resets the connection without applying anything.
	FaultResetBefore
	// FaultResetAfter applies the batch, then resets the connection
	// before any answer is written: the client cannot know it landed.
	FaultResetAfter
)

// Fault describes faults to inject into the next matching requests.
type Fault struct {
	Kind FaultKind
	// Times is how many matching requests get the fault (0 means 1).
	Times int
	// Writes limits the fault to requests with a statement that writes;
	// Reads to requests whose statements only read. Neither: any request.
	Writes, Reads bool
	// RetryAfter is the Retry-After value of a 429, in seconds (0 omits it).
	RetryAfter int
	// Delay bounds how long a timeout fault holds a request (0: 30 s, D1's
	// request limit).
	Delay time.Duration
}

type faultQueue struct {
	mu   gosync.Mutex
	q    []Fault
	down bool
	hits map[FaultKind]int
}

// Inject queues f; faults apply in the order they were injected.
func (h *Handler) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	h.faults.mu.Lock()
	h.faults.q = append(h.faults.q, f)
	h.faults.mu.Unlock()
}

// SetDown makes every request (down=true) fail with a connection reset,
// as an unreachable engine would, until SetDown(false).
func (h *Handler) SetDown(down bool) {
	h.faults.mu.Lock()
	h.faults.down = down
	h.faults.mu.Unlock()
}

// PendingFaults returns how many injected faults have not fired yet.
func (h *Handler) PendingFaults() int {
	h.faults.mu.Lock()
	defer h.faults.mu.Unlock()
	n := 0
	for _, f := range h.faults.q {
		n += f.Times
	}
	return n
}

// FaultsFired returns how many times faults of kind k fired.
func (h *Handler) FaultsFired(k FaultKind) int {
	h.faults.mu.Lock()
	defer h.faults.mu.Unlock()
	return h.faults.hits[k]
}

// take returns the fault for a request (0 when none) and whether the
// double is down.
func (q *faultQueue) take(write bool) (Fault, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return Fault{}, true
	}
	for i, f := range q.q {
		if (f.Writes && !write) || (f.Reads && write) {
			continue
		}
		q.q[i].Times--
		if q.q[i].Times == 0 {
			q.q = append(q.q[:i], q.q[i+1:]...)
		}
		if q.hits == nil {
			q.hits = map[FaultKind]int{}
		}
		q.hits[f.Kind]++
		return f, false
	}
	return Fault{}, false
}

// reset closes the client's connection abruptly (RST), writing nothing.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// hold waits until the client gives up or d passes.
func hold(r *http.Request, d time.Duration) {
	if d <= 0 {
		d = 30 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
}

const htmlError = `<!DOCTYPE html>
<html><head><title>Internal Server Error</title></head>
<body><h1>500 Internal Server Error</h1><p>cloudflare</p></body></html>
`

// before runs the part of fault f that happens before the batch is
// applied; it reports whether the request was answered (nothing applied).
func before(w http.ResponseWriter, r *http.Request, f Fault) bool {
	switch f.Kind {
	case Fault429:
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		writeJSON(w, http.StatusTooManyRequests, failure(7429, "D1 DB is overloaded. Requests queued for too long."))
		return true
	case Fault500:
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(htmlError))
		return true
	case FaultTimeout:
		hold(r, f.Delay)
		if r.Context().Err() == nil {
			w.Header().Set("Content-Type", "text/html; charset=UTF-8")
			w.WriteHeader(http.StatusGatewayTimeout)
			_, _ = w.Write([]byte(htmlError))
		}
		return true
	case FaultResetBefore:
		reset(w)
		return true
	}
	return false
}

// after runs the part of fault f that happens once the batch is applied;
// it reports whether the answer must not be written.
func after(w http.ResponseWriter, r *http.Request, f Fault) bool {
	switch f.Kind {
	case FaultResetAfter:
		reset(w)
		return true
	case FaultTimeoutAfter:
		hold(r, f.Delay)
		return r.Context().Err() != nil
	}
	return false
}

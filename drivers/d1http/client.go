package d1http

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
)

// stmt is one {sql, params} of a request. Params is never nil: D1
// refuses "params": null.
type stmt struct {
	SQL    string `json:"sql"`
	Params []any  `json:"params"`
}

func st(q string, args ...any) stmt {
	if args == nil {
		args = []any{}
	}
	return stmt{SQL: q, Params: args}
}

// result is the answer to one statement of a /raw request.
type result struct {
	Results struct {
		Columns []string            `json:"columns"`
		Rows    [][]json.RawMessage `json:"rows"`
	} `json:"results"`
	Success bool `json:"success"`
	Meta    struct {
		Changes int64 `json:"changes"`
	} `json:"meta"`
}

type apiResponse struct {
	Success bool `json:"success"`
	Errors  []struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
	Result []result `json:"result"`
}

// outcome classifies one HTTP attempt.
type outcome int

const (
	outOK         outcome = iota // answered with success
	outRefused                   // answered with an error: nothing applied, retrying will not help
	outNotApplied                // a transient failure known to have applied nothing (429, dial error)
	outUnknown                   // timeout, reset, 5xx: a write may or may not have landed
	outTooBig                    // the answer is longer than the caller's bound: not read, not retried
)

// attemptErr is the error of one failed attempt.
type attemptErr struct {
	out        outcome
	retryAfter time.Duration
	status     int
	code       int
	msg        string // the engine's message (identifiers only, never values)
	cause      error
}

func (e *attemptErr) Error() string {
	switch {
	case e.msg != "":
		return e.msg
	case e.status != 0:
		return "HTTP " + strconv.Itoa(e.status)
	case e.cause != nil:
		return e.cause.Error()
	}
	return "request failed"
}

// client speaks D1's HTTP query API for one database.
type client struct {
	url            string // …/d1/database/{id}
	token          string
	hc             *http.Client
	requestTimeout time.Duration
	maxAttempts    int
	requests       func() // counts requests (tests)
	// expiredAt is when (Unix ms) a batch of this client last deleted
	// expired tokens; the next batch due after tokenExpireEvery does again.
	expiredAt atomic.Int64
}

// maxAnswerBytes bounds the answer to one request read into memory.
const maxAnswerBytes = 256 << 20

// send posts one batch to /raw once.
func (c *client) send(ctx context.Context, stmts []stmt) ([]result, *attemptErr) {
	return c.sendWith(ctx, stmts, c.requestTimeout, maxAnswerBytes)
}

// sendWith is send with its own request timeout and answer size bound: an
// answer longer than maxBody is not read past it (outTooBig).
func (c *client) sendWith(ctx context.Context, stmts []stmt, timeout time.Duration, maxBody int64) ([]result, *attemptErr) {
	body, err := json.Marshal(map[string]any{"batch": stmts})
	if err != nil {
		return nil, &attemptErr{out: outRefused, msg: "encode request", cause: err}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.url+"/raw", bytes.NewReader(body))
	if err != nil {
		return nil, &attemptErr{out: outRefused, msg: "build request", cause: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.requests != nil {
		c.requests()
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &attemptErr{out: outNotApplied, cause: err}
		}
		return nil, &attemptErr{out: outUnknown, cause: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, &attemptErr{out: outUnknown, status: resp.StatusCode, cause: err}
	}
	if int64(len(data)) > maxBody {
		return nil, &attemptErr{out: outTooBig, status: resp.StatusCode, msg: "the answer is over the size bound"}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return nil, &attemptErr{out: outNotApplied, status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	if resp.StatusCode >= 500 {
		return nil, &attemptErr{out: outUnknown, status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	var ar apiResponse
	if err := json.Unmarshal(data, &ar); err != nil {
		return nil, &attemptErr{out: outUnknown, status: resp.StatusCode, msg: "the answer is not D1's JSON"}
	}
	if resp.StatusCode != http.StatusOK || !ar.Success {
		e := &attemptErr{out: outRefused, status: resp.StatusCode}
		if len(ar.Errors) > 0 {
			e.code, e.msg = ar.Errors[0].Code, ar.Errors[0].Message
		}
		return nil, e
	}
	if len(ar.Result) != len(stmts) {
		return nil, &attemptErr{out: outUnknown, msg: fmt.Sprintf("D1 answered %d results for %d statements", len(ar.Result), len(stmts))}
	}
	return ar.Result, nil
}

// retryAfter parses a Retry-After header in seconds (HTTP dates are rare
// on this API and read as 0).
func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// pacer spaces retries: capped exponential backoff with jitter, never
// shorter than a Retry-After the server asked for.
type pacer struct{ b *backoff.ExponentialBackOff }

func newPacer() *pacer {
	b := &backoff.ExponentialBackOff{InitialInterval: 20 * time.Millisecond, RandomizationFactor: 0.5,
		Multiplier: 2, MaxInterval: 2 * time.Second}
	b.Reset()
	return &pacer{b: b}
}

// wait sleeps before the next attempt; false when ctx ended.
func (p *pacer) wait(ctx context.Context, atLeast time.Duration) bool {
	d := p.b.NextBackOff()
	if atLeast > d {
		d = atLeast
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// read runs read-only statements in one request (one snapshot), retrying
// transient failures (429, 5xx, timeouts, resets) with backoff and jitter,
// honouring Retry-After, until it succeeds, maxAttempts are spent or ctx
// ends. Errors: CodeUnavailable (retryable) for transport failures, the
// classified engine error otherwise.
func (c *client) read(ctx context.Context, what string, stmts ...stmt) ([]result, error) {
	p := newPacer()
	for attempt := 1; ; attempt++ {
		res, e := c.send(ctx, stmts)
		if e == nil {
			return res, nil
		}
		if e.out == outRefused || attempt >= c.maxAttempts || ctx.Err() != nil || !p.wait(ctx, e.retryAfter) {
			return nil, classify(ctx, e, what)
		}
	}
}

// readQuery is read for an authoritative query under limits (AQ-6): the
// request ends at limits.Timeout (D1's own engine limit is 30 s; the
// driver cannot end a statement on D1 sooner, only stop waiting for it),
// an answer longer than queryAnswerBytes(limits) is not read, and neither
// is retried — the same statement would fail the same way, and a retry
// would hold D1's one engine of the database for other partitions too.
// Only a failure known to have applied nothing and not caused by the
// statement (429, a refused connection) is retried, within the timeout.
// Errors: a *driver.QueryLimitError (time, bytes); the *attemptErr of an
// answer D1 refused (the caller classifies it); else classify's.
func (c *client) readQuery(ctx context.Context, what string, limits driver.QueryLimits, stmts ...stmt) ([]result, error) {
	qctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	defer cancel()
	p := newPacer()
	for attempt := 1; ; attempt++ {
		res, e := c.sendWith(qctx, stmts, limits.Timeout, queryAnswerBytes(limits))
		switch {
		case e == nil:
			return res, nil
		case ctx.Err() != nil:
			return nil, classify(ctx, e, what)
		case e.out == outTooBig:
			return nil, driver.NewQueryLimitError(driver.BoundBytes, limits.MaxResultBytes, nil, what)
		case qctx.Err() != nil:
			// The request outlived the bound.
			return nil, driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), nil, what)
		case e.out == outRefused:
			return nil, e
		case e.out != outNotApplied || attempt >= c.maxAttempts || !p.wait(qctx, e.retryAfter):
			if qctx.Err() != nil && ctx.Err() == nil {
				return nil, driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), nil, what)
			}
			return nil, classify(ctx, e, what)
		}
	}
}

// queryAnswerBytes is the longest answer readQuery reads: the result
// bound three times over (D1's JSON, and the typed encoding of
// D1QueryWrap, spell a value in up to about twice its bytes) plus 1 MiB.
func queryAnswerBytes(l driver.QueryLimits) int64 { return 3*l.MaxResultBytes + 1<<20 }

// applied is what a write batch returns: its statements' results, or,
// when the answer was lost but the batch is known to have landed, nil
// results with lost set and n, changes() of the last caller statement.
type applied struct {
	res  []result
	lost bool
	n    int64
}

// tokenTTL is how long idempotency tokens are kept (at least).
const tokenTTL = 24 * time.Hour

// tokenExpireEvery is how often a client's write batches delete expired
// tokens: a batch carries D1TokenExpire only when the last one that did
// landed longer ago than this (one statement less per batch otherwise;
// D1 parses and bills per statement). Tokens therefore live between
// tokenTTL and tokenTTL + tokenExpireEvery while the client writes.
const tokenExpireEvery = time.Minute

// outcomeLookupTimeout bounds the fence that settles a batch whose answer
// was lost (TX-10), beyond the caller's context: it runs on a context
// detached from the caller's, so a batch cut off by the caller's deadline
// is still settled. A var so that tests can shorten it.
var outcomeLookupTimeout = 10 * time.Second

// write sends stmts as one all-or-nothing batch, adding an idempotency
// token row (and, once per tokenExpireEvery, the deletion of expired
// tokens). A batch whose outcome is unknown (timeout, reset, 5xx, the
// caller's context ended) is never re-sent blindly: the token is fenced
// (marked void unless it landed) on a detached context bounded by
// outcomeLookupTimeout, which tells for sure whether the batch landed and
// guarantees it never lands later; only a batch known not to have landed
// is sent again, under a new token. Zero duplicate writes, zero lost
// writes. When the fence itself fails, the error is
// CodeCommitOutcomeUnknown: the batch may have landed (TX-10).
func (c *client) write(ctx context.Context, what string, stmts []stmt) (applied, error) {
	if err := ctx.Err(); err != nil {
		return applied{}, driver.Wrap(driver.CodeUnavailable, err, "%s: context ended; nothing was sent", what)
	}
	p := newPacer()
	for attempt := 1; ; attempt++ {
		token := newToken()
		now := time.Now().UnixMilli()
		batch := append(append(make([]stmt, 0, len(stmts)+2), stmts...), st(d1sql.D1TokenApplied, token, now))
		expire := now-c.expiredAt.Load() >= tokenExpireEvery.Milliseconds()
		if expire {
			batch = append(batch, st(d1sql.D1TokenExpire, now-tokenTTL.Milliseconds()))
		}
		res, e := c.send(ctx, batch)
		if e == nil {
			if expire {
				c.expiredAt.Store(now)
			}
			return applied{res: res[:len(stmts)]}, nil
		}
		if e.out == outUnknown {
			// The fence goes out on a context of its own: the caller's
			// may be the very reason the answer was lost (TX-10).
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeLookupTimeout)
			landed, n, err := c.fence(fctx, token, what)
			cancel()
			if err != nil {
				return applied{}, err
			}
			if landed {
				if expire {
					c.expiredAt.Store(now)
				}
				return applied{lost: true, n: n}, nil
			}
		}
		if e.out == outRefused || attempt >= c.maxAttempts || ctx.Err() != nil || !p.wait(ctx, e.retryAfter) {
			return applied{}, classify(ctx, e, what)
		}
	}
}

// fence makes sure the batch of token either landed or never will, and
// says which, retrying transient failures until ctx ends.
func (c *client) fence(ctx context.Context, token, what string) (landed bool, n int64, err error) {
	p := newPacer()
	for attempt := 1; ; attempt++ {
		res, e := c.send(ctx, []stmt{st(d1sql.D1TokenFence, token, time.Now().UnixMilli()), st(d1sql.D1TokenState, token)})
		if e == nil {
			rows := res[1].Results.Rows
			if len(rows) != 1 || len(rows[0]) != 2 {
				return false, 0, driver.Errorf(driver.CodeInternal, "%s: the idempotency token vanished", what)
			}
			state, _ := rawString(rows[0][0])
			n, _ := rawInt(rows[0][1])
			return state == "applied", n, nil
		}
		if e.out == outRefused || ctx.Err() != nil || !p.wait(ctx, e.retryAfter) {
			return false, 0, driver.Wrap(driver.CodeCommitOutcomeUnknown, e,
				"%s: the outcome of a write is unknown (the engine did not answer and could not be asked within %s); re-read what it wrote before anything else (TX-10)",
				what, outcomeLookupTimeout)
		}
	}
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// classify turns a failed attempt into a *driver.Error (ERR-1). Engine
// messages name identifiers only, never values (V-10).
func classify(ctx context.Context, e *attemptErr, what string) error {
	if ctx.Err() != nil {
		return driver.Wrap(driver.CodeUnavailable, ctx.Err(), "%s: context ended", what)
	}
	switch e.out {
	case outNotApplied, outUnknown:
		return driver.Wrap(driver.CodeUnavailable, e, "%s: D1 is unavailable", what)
	}
	switch {
	case strings.Contains(e.msg, d1sql.ConflictConstraint):
		return driver.Wrap(driver.CodeWriteConflict, e, "%s: another transaction of the partition committed first; nothing was written (TX-9)", what)
	case strings.Contains(e.msg, d1sql.BindConstraint):
		return driver.Wrap(driver.CodeClientActorMismatch, e, "%s: the client id is bound to another actor; nothing was written (CR-7)", what)
	case strings.Contains(e.msg, d1sql.GuardConstraint):
		return driver.Wrap(driver.CodeWriteConflict, e, "%s: a guarded write's guard did not hold; nothing was written (GW-2)", what)
	case strings.Contains(e.msg, d1sql.PushResultsKeyCollision):
		return driver.Wrap(driver.CodeWriteConflict, e, "%s: a push result is stored under the key of a guarded one; nothing was written (GW-3)", what)
	case strings.Contains(e.msg, "UNIQUE constraint failed"):
		return driver.Wrap(driver.CodeConstraintViolation, e, "%s: unique index collision (SCH-10)", what)
	case e.status == http.StatusUnauthorized || e.status == http.StatusForbidden:
		return driver.Wrap(driver.CodeInvalidArgument, e, "%s: D1 refused the DSN's API token; retrying will not help", what)
	case e.status == http.StatusNotFound:
		return driver.Wrap(driver.CodeInvalidArgument, e, "%s: the DSN's account or database does not exist on D1; retrying will not help", what)
	case strings.Contains(e.msg, "SQLITE_TOOBIG"):
		return driver.Wrap(driver.CodeInvalidValue, e, "%s: a value or statement is over D1's size limits (docs/d1http.md); nothing was written", what)
	}
	return driver.Wrap(driver.CodeInternal, e, "%s", what)
}

// rawString decodes a JSON string.
func rawString(r json.RawMessage) (string, error) {
	var s string
	err := json.Unmarshal(r, &s)
	return s, err
}

// rawInt decodes an integer sent as a JSON number or as decimal text
// (CAST(… AS TEXT), exact beyond 2^53); null is 0.
func rawInt(r json.RawMessage) (int64, error) {
	if string(r) == "null" {
		return 0, nil
	}
	if len(r) > 0 && r[0] == '"' {
		s, err := rawString(r)
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(s, 10, 64)
	}
	return strconv.ParseInt(string(r), 10, 64)
}

// num binds an int64 exactly: a JSON number when JavaScript holds it
// exactly, else decimal text (compared with INTEGER columns, SQLite
// converts it back).
func num(i int64) any {
	if i >= -(1<<53) && i <= 1<<53 {
		return i
	}
	return strconv.FormatInt(i, 10)
}

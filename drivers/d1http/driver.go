// Package d1http is the syncstore driver for Cloudflare D1 over its HTTP
// query API. Import it for its side effect:
//
//	import _ "github.com/syncstore/syncstore/drivers/d1http"
//	store, err := sync.Open("d1http", "d1://ACCOUNT_ID/DATABASE_ID?token=…")
//
// # DSN
//
//		d1://ACCOUNT_ID/DATABASE_ID?token=T&endpoint=URL&request_timeout_ms=N&max_attempts=N
//
//	  - token: the API token; when absent, env SYNCSTORE_D1_TOKEN.
//	  - endpoint: the API's base URL, default https://api.cloudflare.com
//	    (tests point it at drivers/d1http/d1test).
//	  - request_timeout_ms: the timeout of one HTTP request (default 30000,
//	    D1's own request limit).
//	  - max_attempts: attempts per operation on transient failures (default 8).
//	  - fanout_poll_ms: how often SubscribeCommits polls the partitions'
//	    heads (default 1000, at least 10; each poll is one read request,
//	    billed by D1 as one row read per partition).
//
// # How the contract is met
//
// D1 has no interactive transactions. Reads go out at once; a Tx buffers
// its writes and sends them as ONE batch at Commit, which D1 applies
// all-or-nothing. Begin reads the partition's stamp (bumped by every
// committed transaction of the partition) and its max commit seq in one
// request; the Commit batch starts with a guard that bumps the stamp only
// if it is unchanged, and otherwise fails the whole batch, reported as
// the retryable CodeWriteConflict (TX-1, TX-9, SEQ-4): everything the Tx
// read (rows, scans, push results, the seq it allocated) is therefore
// still true when its writes land. Commit-seq allocation is also guarded
// by the commits' primary key. A lost race is never a constraint
// violation or a stored rejection.
//
// Reads inside a Tx see its buffered writes (TX-3): rows, scans, index
// lookups and push results are overlaid on what D1 returns.
//
// Retries: reads retry 429, 5xx, timeouts and resets with capped
// exponential backoff and jitter, honouring Retry-After. A write batch
// carries an idempotency token row; when its outcome is unknown the
// driver fences the token (marks it void unless it landed) and so learns
// the truth; only a batch known not to have landed is sent again. See
// docs/d1http.md.
//
// Values cross JSON, which rounds integers beyond 2^53 and has no bytes:
// row values are sent as text inside one JSON parameter (so wide tables
// never hit D1's 100-parameter limit) and read back as text or hex
// (VAL-1). The SQL is internal/sqlitesql's, shared with drivers/sqlite,
// and, for what only D1 runs, internal/d1sql's.
package d1http

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// init registers the driver as "d1http".
func init() { syncstore.Register("d1http", Driver{}) }

// TokenEnv is the environment variable holding the API token when the DSN has none.
const TokenEnv = "SYNCSTORE_D1_TOKEN"

// DefaultEndpoint is Cloudflare's API.
const DefaultEndpoint = "https://api.cloudflare.com"

// Driver opens D1 stores over HTTP. The zero value is ready and safe for
// concurrent use. It implements driver.Driver and driver.Provisioner.
type Driver struct{}

var (
	_ driver.Driver      = Driver{}
	_ driver.Provisioner = Driver{}
)

// config is a parsed DSN.
type config struct {
	account, database, token, endpoint string
	requestTimeout                     time.Duration
	maxAttempts                        int
	fanoutPoll                         time.Duration // commit fanout's poll interval (fanout.go)
}

func parseDSN(dsn string) (config, error) {
	bad := func(why string) (config, error) {
		return config{}, driver.Errorf(driver.CodeInvalidArgument, "d1http: malformed DSN: %s (want d1://ACCOUNT/DATABASE?token=…)", why)
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "d1" {
		return bad("scheme is not d1")
	}
	cfg := config{account: u.Host, database: strings.Trim(u.Path, "/"), endpoint: DefaultEndpoint,
		requestTimeout: 30 * time.Second, maxAttempts: 8, fanoutPoll: defaultFanoutPoll}
	if cfg.account == "" || strings.Contains(cfg.database, "/") {
		return bad("missing account, or a path with more than a database")
	}
	q := u.Query()
	cfg.token = q.Get("token")
	if cfg.token == "" {
		cfg.token = os.Getenv(TokenEnv)
	}
	if e := q.Get("endpoint"); e != "" {
		if cfg.endpoint, err = parseEndpoint(e); err != nil {
			return bad("endpoint is not an http(s) URL")
		}
	}
	if v := q.Get("request_timeout_ms"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return bad("request_timeout_ms is not a positive integer")
		}
		cfg.requestTimeout = time.Duration(ms) * time.Millisecond
	}
	if v := q.Get("max_attempts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return bad("max_attempts is not a positive integer")
		}
		cfg.maxAttempts = n
	}
	if v := q.Get("fanout_poll_ms"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 10 {
			return bad("fanout_poll_ms is not an integer of at least 10")
		}
		cfg.fanoutPoll = time.Duration(ms) * time.Millisecond
	}
	return cfg, nil
}

// dsn renders cfg with another database.
func (cfg config) dsn(database string) string {
	q := url.Values{}
	if cfg.token != "" {
		q.Set("token", cfg.token)
	}
	if cfg.endpoint != DefaultEndpoint {
		q.Set("endpoint", cfg.endpoint)
	}
	q.Set("request_timeout_ms", strconv.FormatInt(cfg.requestTimeout.Milliseconds(), 10))
	q.Set("max_attempts", strconv.Itoa(cfg.maxAttempts))
	return "d1://" + cfg.account + "/" + database + "?" + q.Encode()
}

func (cfg config) accountURL() string {
	return cfg.endpoint + "/client/v4/accounts/" + url.PathEscape(cfg.account) + "/d1/database"
}

// sharedTransport is reused by every Conn (connection reuse across stores).
var sharedTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}()

func newClient(cfg config, hc *http.Client) *client {
	if hc == nil {
		hc = &http.Client{Transport: sharedTransport}
	}
	return &client{url: cfg.accountURL() + "/" + url.PathEscape(cfg.database), token: cfg.token,
		hc: hc, requestTimeout: cfg.requestTimeout, maxAttempts: cfg.maxAttempts}
}

// Options configure a Conn beyond its DSN (OpenWith). The zero value
// changes nothing.
type Options struct {
	// HTTPClient, if set, sends every request of the Conn: the host's
	// transport, proxy, TLS settings, tracing (an instrumented
	// RoundTripper) and timeout. The Conn never closes it or its idle
	// connections. The driver still bounds each request by the DSN's
	// request_timeout_ms and retries as the package doc says; a Timeout
	// set on the client bounds each attempt too. nil = a client over a
	// transport shared by the package's Conns.
	HTTPClient *http.Client
	// Endpoint, if not "", is the API's base URL (an http or https URL),
	// in place of the DSN's endpoint parameter and of DefaultEndpoint.
	Endpoint string
}

// Open connects to the database of dsn, creates the infrastructure tables
// (idempotent) and returns a Conn safe for concurrent use. Errors:
// CodeInvalidArgument for a malformed DSN or one without a database,
// CodeUnavailable when D1 cannot be reached within ctx.
func (Driver) Open(ctx context.Context, dsn string) (driver.Conn, error) {
	return OpenWith(ctx, dsn, Options{})
}

// OpenWith is Open with opts: the host's *http.Client and API endpoint.
// Wrap the result with sync.OpenConn to get a Store. Errors: as Open's;
// CodeInvalidArgument also for an Endpoint that is not an http(s) URL.
func OpenWith(ctx context.Context, dsn string, opts Options) (*Conn, error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.database == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "d1http: the DSN names no database")
	}
	if opts.Endpoint != "" {
		if cfg.endpoint, err = parseEndpoint(opts.Endpoint); err != nil {
			return nil, err
		}
	}
	c := &Conn{cl: newClient(cfg, opts.HTTPClient)}
	c.fan.Heads, c.fan.Interval = c.commitHeads, cfg.fanoutPoll
	if err := c.initInfra(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// parseEndpoint checks an API base URL and returns it without a trailing
// slash.
func parseEndpoint(e string) (string, error) {
	if eu, err := url.Parse(e); err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return "", driver.Errorf(driver.CodeInvalidArgument, "d1http: the endpoint is not an http(s) URL")
	}
	return strings.TrimRight(e, "/"), nil
}

// Provision creates a fresh, empty D1 database through the API's
// database endpoint (POST …/accounts/{account}/d1/database), beside
// baseDSN: a d1:// DSN whose account, token and endpoint are used (its
// database, if any, is ignored). drop deletes the database. baseDSN "" →
// CodeInvalidArgument (D1 has no local default).
func (Driver) Provision(ctx context.Context, baseDSN string) (string, func(context.Context) error, error) {
	if baseDSN == "" {
		return "", nil, driver.Errorf(driver.CodeInvalidArgument, "d1http: Provision needs a base DSN d1://ACCOUNT?token=…&endpoint=…")
	}
	cfg, err := parseDSN(baseDSN)
	if err != nil {
		return "", nil, err
	}
	id, err := createDatabase(ctx, cfg, "syncstore-test-"+newToken()[:12])
	if err != nil {
		return "", nil, err
	}
	drop := func(ctx context.Context) error { return deleteDatabase(ctx, cfg, id) }
	return cfg.dsn(id), drop, nil
}

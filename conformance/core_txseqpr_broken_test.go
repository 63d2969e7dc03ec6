package conformance_test

import (
	"context"
	"math"
	"regexp"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestTxSeqPRCasesCatchBrokenDrivers runs the TX, SEQ and PR cases against
// wrappers of the SQLite driver that each break transactions, the commit
// sequence or push results in one way, and checks that exactly the
// expected rules of those groups fail.
func TestTxSeqPRCasesCatchBrokenDrivers(t *testing.T) {
	match := regexp.MustCompile(`^(TX|SEQ|PR)-`)
	broken := []struct {
		name string
		wrap func(driver.Conn) driver.Conn
		want []string // rule IDs that must fail, sorted
		also []string // rules that may fail as well (brokenDriver.also)
	}{
		// BEGIN DEFERRED: the partition is taken at the first write, so
		// reads before it are stale and a cancelled Begin is not noticed.
		{"lazy-begin", func(c driver.Conn) driver.Conn { return &bwLazyBegin{bwConn{c}} },
			[]string{"PR-6", "TX-1", "TX-6", "TX-8", "TX-9"}, nil},
		// Push results written at once, outside the Tx (in memory, where
		// no deletion reaches them either). The TX-10 storm notices when
		// one of its pushes fails after PutPushResult.
		{"results-outside-tx", func(c driver.Conn) driver.Conn { return newBWResults(c) },
			[]string{"PR-3", "PR-4", "PR-7", "TX-2", "TX-4", "TX-5", "TX-6", "TX-8"}, []string{"TX-10"}},
		// CommitRejected that commits the staged writes.
		{"rejected-keeps-writes", func(c driver.Conn) driver.Conn { return &bwRejectKeeps{bwConn{c}} },
			[]string{"SEQ-2", "TX-8"}, nil},
		// CommitRejected as Rollback + a second Tx: the partition is free
		// in between.
		{"rejected-releases-partition", func(c driver.Conn) driver.Conn { return &bwRejectReleases{bwConn{c}} },
			[]string{"TX-5", "TX-8"}, nil},
		// A finished Tx that silently accepts further calls.
		{"finished-tx-accepts-calls", func(c driver.Conn) driver.Conn { return &bwFinishedOK{bwConn{c}} },
			[]string{"TX-5", "TX-8"}, nil},
		// A Tx that ignores cancellation of its context.
		{"ignores-cancel", func(c driver.Conn) driver.Conn { return &bwIgnoreCancel{bwConn{c}} },
			[]string{"TX-6"}, nil},
		// Reads inside a Tx that see only committed state.
		{"tx-reads-committed-only", func(c driver.Conn) driver.Conn { return &bwBlindReads{bwConn{c}} },
			[]string{"PR-1", "PR-3", "TX-3", "TX-5", "TX-8"}, nil},
		// A result codec that loses -0 and empty bytes.
		{"lossy-push-results", func(c driver.Conn) driver.Conn { return &bwLossyResults{bwConn{c}} },
			[]string{"PR-1", "TX-8"}, nil},
	}
	list := make([]brokenDriver, 0, len(broken))
	for _, b := range broken {
		list = append(list, brokenDriver{name: b.name, wrap: b.wrap, want: b.want, also: b.also, match: match})
	}
	runBroken(t, list)
}

// bwConn and bwTx forward every core method to the wrapped value.
type bwConn struct{ driver.Conn }

type bwTx struct{ driver.Tx }

// ---- lazy Begin: the real Tx starts at the first write ----

type bwLazyBegin struct{ bwConn }

type bwLazyTx struct {
	conn driver.Conn
	ctx  context.Context
	p    string
	tx   driver.Tx
	done bool
}

func (c *bwLazyBegin) Begin(ctx context.Context, p string) (driver.Tx, error) {
	return &bwLazyTx{conn: c.Conn, ctx: ctx, p: p}, nil
}

func (t *bwLazyTx) real() (driver.Tx, error) {
	if t.done {
		return nil, driver.Errorf(driver.CodeTxFinished, "finished")
	}
	if t.tx == nil {
		tx, err := t.conn.Begin(t.ctx, t.p)
		if err != nil {
			return nil, err
		}
		t.tx = tx
	}
	return t.tx, nil
}

func (t *bwLazyTx) Partition() string { return t.p }
func (t *bwLazyTx) GetRow(ctx context.Context, table, id string) (driver.Row, bool, error) {
	if t.tx == nil && !t.done {
		return t.conn.GetRow(ctx, t.p, table, id)
	}
	tx, err := t.real()
	if err != nil {
		return driver.Row{}, false, err
	}
	return tx.GetRow(ctx, table, id)
}
func (t *bwLazyTx) ScanRows(ctx context.Context, q driver.ScanQuery) ([]driver.Row, error) {
	if t.tx == nil && !t.done {
		return t.conn.ScanRows(ctx, t.p, q)
	}
	tx, err := t.real()
	if err != nil {
		return nil, err
	}
	return tx.ScanRows(ctx, q)
}
func (t *bwLazyTx) GetPushResult(ctx context.Context, client, commit string) (driver.PushResult, bool, error) {
	if t.tx == nil && !t.done {
		return t.conn.GetPushResult(ctx, t.p, client, commit)
	}
	tx, err := t.real()
	if err != nil {
		return driver.PushResult{}, false, err
	}
	return tx.GetPushResult(ctx, client, commit)
}
func (t *bwLazyTx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	tx, err := t.real()
	if err != nil {
		return err
	}
	return tx.UpsertRow(ctx, table, row)
}
func (t *bwLazyTx) DeleteRow(ctx context.Context, table, id string) error {
	tx, err := t.real()
	if err != nil {
		return err
	}
	return tx.DeleteRow(ctx, table, id)
}
func (t *bwLazyTx) RowTombstone(ctx context.Context, table, id string) (int64, error) {
	tx, err := t.real()
	if err != nil {
		return 0, err
	}
	return tx.RowTombstone(ctx, table, id)
}
func (t *bwLazyTx) AppendCommit(ctx context.Context, c driver.CommitInput) (int64, error) {
	tx, err := t.real()
	if err != nil {
		return 0, err
	}
	return tx.AppendCommit(ctx, c)
}
func (t *bwLazyTx) PutPushResult(ctx context.Context, client, commit string, r driver.PushResult) error {
	tx, err := t.real()
	if err != nil {
		return err
	}
	return tx.PutPushResult(ctx, client, commit, r)
}
func (t *bwLazyTx) BindClient(ctx context.Context, client, actor string, atMs int64) error {
	tx, err := t.real()
	if err != nil {
		return err
	}
	return tx.BindClient(ctx, client, actor, atMs)
}
func (t *bwLazyTx) CommitRejected(ctx context.Context, client, commit string, r driver.PushResult) error {
	tx, err := t.real()
	if err != nil {
		return err
	}
	t.done = true
	return tx.CommitRejected(ctx, client, commit, r)
}
func (t *bwLazyTx) Commit(ctx context.Context) error {
	if t.done {
		return driver.Errorf(driver.CodeTxFinished, "finished")
	}
	t.done = true
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit(ctx)
}
func (t *bwLazyTx) Rollback(ctx context.Context) error {
	t.done = true
	if t.tx == nil {
		return nil
	}
	return t.tx.Rollback(ctx)
}

// ---- push results kept in memory, written at once (first writer wins) ----

type bwResults struct {
	bwConn
	mu      gosync.Mutex
	results map[[3]string]driver.PushResult
}

func newBWResults(c driver.Conn) *bwResults {
	return &bwResults{bwConn: bwConn{c}, results: map[[3]string]driver.PushResult{}}
}

type bwResultsTx struct {
	bwTx
	c *bwResults
}

func (c *bwResults) put(k [3]string, r driver.PushResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.results[k]; !ok {
		c.results[k] = r
	}
}

func (c *bwResults) get(k [3]string) (driver.PushResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.results[k]
	return r, ok
}

func (c *bwResults) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bwResultsTx{bwTx{tx}, c}, nil
}
func (c *bwResults) GetPushResult(ctx context.Context, p, client, commit string) (driver.PushResult, bool, error) {
	if r, ok := c.get([3]string{p, client, commit}); ok {
		return r, true, nil
	}
	return c.Conn.GetPushResult(ctx, p, client, commit)
}
func (t *bwResultsTx) PutPushResult(ctx context.Context, client, commit string, r driver.PushResult) error {
	t.c.put([3]string{t.Partition(), client, commit}, r)
	return nil
}
func (t *bwResultsTx) GetPushResult(ctx context.Context, client, commit string) (driver.PushResult, bool, error) {
	if r, ok := t.c.get([3]string{t.Partition(), client, commit}); ok {
		return r, true, nil
	}
	return t.Tx.GetPushResult(ctx, client, commit)
}

// ---- CommitRejected = PutPushResult + Commit ----

type bwRejectKeeps struct{ bwConn }

type bwRejectKeepsTx struct{ bwTx }

func (c *bwRejectKeeps) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bwRejectKeepsTx{bwTx{tx}}, nil
}
func (t *bwRejectKeepsTx) CommitRejected(ctx context.Context, client, commit string, r driver.PushResult) error {
	if err := t.Tx.PutPushResult(ctx, client, commit, r); err != nil {
		return err
	}
	return t.Tx.Commit(ctx)
}

// ---- CommitRejected = Rollback, then a new Tx stores the result ----

type bwRejectReleases struct{ bwConn }

type bwRejectReleasesTx struct {
	bwTx
	conn driver.Conn
}

func (c *bwRejectReleases) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bwRejectReleasesTx{bwTx{tx}, c.Conn}, nil
}
func (t *bwRejectReleasesTx) CommitRejected(ctx context.Context, client, commit string, r driver.PushResult) error {
	if err := t.Tx.Rollback(ctx); err != nil {
		return err
	}
	tx, err := t.conn.Begin(ctx, t.Partition())
	if err != nil {
		return err
	}
	if err := tx.PutPushResult(ctx, client, commit, r); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// ---- a finished Tx answers nil instead of tx_finished ----

type bwFinishedOK struct{ bwConn }

type bwFinishedOKTx struct{ bwTx }

func (c *bwFinishedOK) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bwFinishedOKTx{bwTx{tx}}, nil
}

func bwSwallow(err error) error {
	if driver.CodeOf(err) == driver.CodeTxFinished {
		return nil
	}
	return err
}

func (t *bwFinishedOKTx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	return bwSwallow(t.Tx.UpsertRow(ctx, table, row))
}
func (t *bwFinishedOKTx) DeleteRow(ctx context.Context, table, id string) error {
	return bwSwallow(t.Tx.DeleteRow(ctx, table, id))
}
func (t *bwFinishedOKTx) PutPushResult(ctx context.Context, client, commit string, r driver.PushResult) error {
	return bwSwallow(t.Tx.PutPushResult(ctx, client, commit, r))
}
func (t *bwFinishedOKTx) Commit(ctx context.Context) error { return bwSwallow(t.Tx.Commit(ctx)) }

// ---- a Tx that ignores its context's cancellation ----

type bwIgnoreCancel struct{ bwConn }

type bwIgnoreCancelTx struct{ bwTx }

func (c *bwIgnoreCancel) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(context.WithoutCancel(ctx), p)
	if err != nil {
		return nil, err
	}
	return &bwIgnoreCancelTx{bwTx{tx}}, nil
}
func (t *bwIgnoreCancelTx) UpsertRow(ctx context.Context, table string, row driver.Row) error {
	return t.Tx.UpsertRow(context.WithoutCancel(ctx), table, row)
}
func (t *bwIgnoreCancelTx) AppendCommit(ctx context.Context, c driver.CommitInput) (int64, error) {
	return t.Tx.AppendCommit(context.WithoutCancel(ctx), c)
}
func (t *bwIgnoreCancelTx) PutPushResult(ctx context.Context, client, commit string, r driver.PushResult) error {
	return t.Tx.PutPushResult(context.WithoutCancel(ctx), client, commit, r)
}
func (t *bwIgnoreCancelTx) Commit(ctx context.Context) error {
	return t.Tx.Commit(context.WithoutCancel(ctx))
}

// ---- reads inside a Tx go to committed state ----

type bwBlindReads struct{ bwConn }

type bwBlindTx struct {
	bwTx
	conn driver.Conn
}

func (c *bwBlindReads) Begin(ctx context.Context, p string) (driver.Tx, error) {
	tx, err := c.Conn.Begin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bwBlindTx{bwTx{tx}, c.Conn}, nil
}
func (t *bwBlindTx) GetRow(ctx context.Context, table, id string) (driver.Row, bool, error) {
	return t.conn.GetRow(ctx, t.Partition(), table, id)
}
func (t *bwBlindTx) ScanRows(ctx context.Context, q driver.ScanQuery) ([]driver.Row, error) {
	return t.conn.ScanRows(ctx, t.Partition(), q)
}
func (t *bwBlindTx) GetPushResult(ctx context.Context, client, commit string) (driver.PushResult, bool, error) {
	return t.conn.GetPushResult(ctx, t.Partition(), client, commit)
}

// ---- stored results lose -0 and empty bytes ----

type bwLossyResults struct{ bwConn }

func (c *bwLossyResults) GetPushResult(ctx context.Context, p, client, commit string) (driver.PushResult, bool, error) {
	r, ok, err := c.Conn.GetPushResult(ctx, p, client, commit)
	for _, op := range r.Ops {
		for k, v := range op.ServerRow {
			switch v := v.(type) {
			case []byte:
				if len(v) == 0 {
					op.ServerRow[k] = []byte(nil)
				}
			case float64:
				if v == 0 && math.Signbit(v) {
					op.ServerRow[k] = 0.0
				}
			}
		}
	}
	return r, ok, err
}

package d1http

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/driver/fanpoll"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/commitwindow"
	"github.com/syncstore/syncstore/internal/partgate"
	"github.com/syncstore/syncstore/internal/schemaplan"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// Conn is an open D1 database (driver.Conn), safe for concurrent use. It
// holds no engine connection: every operation is one or a few HTTP
// requests. It also implements driver.EngineVersioner.
type Conn struct {
	cl     *client
	state  schemaplan.State[*sqlitesql.Table, upserts] // the ensured schema (schemaState)
	closed atomic.Bool
	fan    fanpoll.Hub // commit fanout by polling (fanout.go)
	// gates remembers each partition's stamp and max seq after this
	// Conn's last Tx of it, so that Begin can skip its read (Tx).
	gates partgate.Gates[counters]
}

// counters is what a Tx begins on: the partition's stamp and max seq.
type counters struct{ stamp, max int64 }

var (
	_ driver.Conn            = (*Conn)(nil)
	_ driver.EngineVersioner = (*Conn)(nil)
)

// initInfra creates the infrastructure tables in one batch (every
// statement idempotent), checks the stored format and upgrades an older
// one (retention.go).
func (c *Conn) initInfra(ctx context.Context) error {
	stmts := make([]stmt, 0, len(sqlitesql.InfraDDL)+len(d1sql.D1DDL)+1)
	for _, q := range append(append([]string{}, sqlitesql.InfraDDL...), d1sql.D1DDL...) {
		stmts = append(stmts, st(q))
	}
	stmts = append(stmts, st(sqlitesql.InsertMetaIfAbsent, sqlitesql.MetaFormat, sqlitesql.InfraFormat))
	if _, err := c.cl.write(ctx, "d1http: initialize the store", stmts); err != nil {
		return err
	}
	format, err := c.storedFormat(ctx)
	if err != nil {
		return err
	}
	return c.upgradeFormat(ctx, format)
}

// storedFormat reads the store's storage format.
func (c *Conn) storedFormat(ctx context.Context) (string, error) {
	rows, err := c.rows(ctx, "d1http: read the storage format", sqlitesql.SelectMeta, sqlitesql.MetaFormat)
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", driver.Errorf(driver.CodeInternal, "d1http: the store has no storage format")
	}
	f, _ := rawString(rows[0][0])
	return f, nil
}

// Close marks the Conn closed; later operations, those of its open Txs
// included (whose buffered writes are then never sent), fail with
// CodeClosed (ERR-4). A second Close is a no-op.
func (c *Conn) Close() error {
	c.closed.Store(true)
	c.fan.Close()
	return nil
}

func (c *Conn) check() error {
	if c.closed.Load() {
		return driver.Errorf(driver.CodeClosed, "d1http: the store is closed")
	}
	return nil
}

// EngineVersion returns "D1 (SQLite x.y.z)", or "D1" when the engine
// refuses to tell its SQLite version, as D1 does (driver.EngineVersioner).
func (c *Conn) EngineVersion(ctx context.Context) (string, error) {
	rows, err := c.rows(ctx, "d1http: engine version", sqlitesql.EngineVersion)
	if err != nil && strings.Contains(err.Error(), "not authorized") {
		// D1 refuses sqlite_version() ("not authorized to use function").
		return "D1", nil
	}
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", driver.Errorf(driver.CodeInternal, "d1http: no engine version")
	}
	v, _ := rawString(rows[0][0])
	return "D1 (SQLite " + v + ")", nil
}

// rows runs one read statement and returns its rows.
func (c *Conn) rows(ctx context.Context, what, q string, args ...any) ([][]json.RawMessage, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	res, err := c.cl.read(ctx, what, st(q, args...))
	if err != nil {
		return nil, err
	}
	return res[0].Results.Rows, nil
}

// write sends one batch (see client.write).
func (c *Conn) write(ctx context.Context, what string, stmts ...stmt) (applied, error) {
	if err := c.check(); err != nil {
		return applied{}, err
	}
	return c.cl.write(ctx, what, stmts)
}

// readRows runs a row query of table x (columns D1SelectList) and decodes it.
func (c *Conn) readRows(ctx context.Context, x *sqlitesql.Table, q string, args []any) ([]driver.Row, error) {
	rows, err := c.rows(ctx, "d1http: read rows", q, args...)
	if err != nil {
		return nil, err
	}
	out := make([]driver.Row, 0, len(rows))
	for _, r := range rows {
		row, err := d1sql.D1DecodeRow(x, r)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// GetRow returns the committed row (ROW-4: missing → false, nil).
func (c *Conn) GetRow(ctx context.Context, partition, table, id string) (driver.Row, bool, error) {
	x, err := c.state.Table(table)
	if err != nil {
		return driver.Row{}, false, err
	}
	rows, err := c.readRows(ctx, x, d1sql.D1Rows(x, x.Get), []any{partition, id})
	if err != nil || len(rows) == 0 {
		return driver.Row{}, false, err
	}
	return rows[0], true, nil
}

// tombstone reads x.Tombstone of the id (ROW-5): its committed row's
// version, else its tombstone, else 0.
func (c *Conn) tombstone(ctx context.Context, x *sqlitesql.Table, partition, id string) (int64, error) {
	res, err := c.cl.read(ctx, "d1http: read a tombstone", st(x.Tombstone, partition, id, x.Def.Name))
	if err != nil {
		return 0, err
	}
	if len(res) != 1 || len(res[0].Results.Rows) != 1 || len(res[0].Results.Rows[0]) != 1 {
		return 0, driver.Errorf(driver.CodeInternal, "d1http: read a tombstone: not one value")
	}
	return rawInt(res[0].Results.Rows[0][0])
}

// ScanRows returns committed rows selected by q (SCAN-1…SCAN-5), from the
// scope index of the filter key with the fewest values.
func (c *Conn) ScanRows(ctx context.Context, partition string, q driver.ScanQuery) ([]driver.Row, error) {
	x, plan, err := sqlitesql.PlanScan(c.state.Table, partition, q)
	if err != nil || plan.None {
		return nil, err
	}
	// One request, one snapshot: the unbounded page query (the bound of
	// a multi-value scan would need a second request, and a row deleted
	// in between would shorten the page, SCAN-3).
	return c.readRows(ctx, x, d1sql.D1Rows(x, plan.Query), plan.Args)
}

// GetPushResult returns a committed push result (PR-2, PR-5).
func (c *Conn) GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (driver.PushResult, bool, error) {
	rows, err := c.rows(ctx, "d1http: read a push result", sqlitesql.SelectPushResult, partition, clientID, clientCommitID)
	if err != nil || len(rows) == 0 {
		return driver.PushResult{}, false, err
	}
	text, err := rawString(rows[0][0])
	if err != nil {
		return driver.PushResult{}, false, driver.Errorf(driver.CodeIdempotencyCacheMiss, "stored push result is not text (PR-5)")
	}
	res, err := driver.DecodePushResult([]byte(text))
	if err != nil {
		return driver.PushResult{}, false, err
	}
	return res, true, nil
}

// partitionSeqs returns max_seq and horizon_seq (0, 0 when unknown, P-2).
func (c *Conn) partitionSeqs(ctx context.Context, partition string) (maxSeq, horizon int64, err error) {
	rows, err := c.rows(ctx, "d1http: read partition counters", sqlitesql.SelectPartitionSeqs, partition)
	if err != nil {
		return 0, 0, err
	}
	return decodeSeqs(rows)
}

// decodeSeqs decodes the answer to SelectPartitionSeqs: max_seq and
// horizon_seq, or 0, 0 for no row (an unknown partition, P-2).
func decodeSeqs(rows [][]json.RawMessage) (maxSeq, horizon int64, err error) {
	if len(rows) == 0 {
		return 0, 0, nil
	}
	if len(rows[0]) != 2 {
		return 0, 0, driver.Errorf(driver.CodeInternal, "d1http: partition counters have %d columns, want 2", len(rows[0]))
	}
	if maxSeq, err = rawInt(rows[0][0]); err == nil {
		horizon, err = rawInt(rows[0][1])
	}
	if err != nil {
		return 0, 0, driver.Errorf(driver.CodeInternal, "d1http: partition counters are not integers")
	}
	return maxSeq, horizon, nil
}

// MaxCommitSeq returns the highest committed seq, 0 if none (SEQ-5).
func (c *Conn) MaxCommitSeq(ctx context.Context, partition string) (int64, error) {
	m, _, err := c.partitionSeqs(ctx, partition)
	return m, err
}

// HorizonSeq returns the partition's pruning horizon, 0 by default (HZ-1).
func (c *Conn) HorizonSeq(ctx context.Context, partition string) (int64, error) {
	_, h, err := c.partitionSeqs(ctx, partition)
	return h, err
}

// CommitSeqBefore returns the largest retained seq created strictly
// before atMs, else 0 (HZ-3).
func (c *Conn) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (int64, error) {
	rows, err := c.rows(ctx, "d1http: commit seq before", sqlitesql.CommitSeqBefore, partition, num(atMs))
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return rawInt(rows[0][0])
}

// SetHorizonSeq raises the horizon to seq (HZ-1): at or below the current
// horizon is a no-op; above MaxCommitSeq → CodeInvalidHorizon. The update
// itself only ever raises, so racing calls cannot lower it.
func (c *Conn) SetHorizonSeq(ctx context.Context, partition string, seq int64) error {
	maxSeq, horizon, err := c.partitionSeqs(ctx, partition)
	if err != nil {
		return err
	}
	if raise, err := commitwindow.RaiseHorizon(seq, maxSeq, horizon); !raise {
		return err
	}
	_, err = c.write(ctx, "d1http: set horizon", st(d1sql.D1SetHorizon, partition, seq))
	return err
}

// PruneCommitsThrough deletes the commits ≤ seq with their changes and
// change-scope entries in one batch and returns how many commits it
// removed; seq > horizon → CodeInvalidHorizon (HZ-2).
func (c *Conn) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (int64, error) {
	_, horizon, err := c.partitionSeqs(ctx, partition)
	if err != nil {
		return 0, err
	}
	if seq > horizon {
		return 0, driver.Errorf(driver.CodeInvalidHorizon, "prune bound %d is past the horizon %d (HZ-2)", seq, horizon)
	}
	a, err := c.write(ctx, "d1http: prune commits",
		st(sqlitesql.PruneChangeScopes, partition, seq), st(sqlitesql.PruneChanges, partition, seq), st(sqlitesql.PruneCommits, partition, seq))
	if err != nil {
		return 0, err
	}
	if a.lost {
		return a.n, nil
	}
	return a.res[2].Meta.Changes, nil
}

package conformance

import (
	"context"
	"fmt"
	"math"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// SCH-6 (what a newer version may change, and nothing else) and SCH-7
// (interrupted and concurrent migrations end correct).

// schUnsupported returns version-2 schemas that change TestSchema in a way
// SCH-6 does not allow, each with one such change.
func schUnsupported() []struct {
	name   string
	schema driver.Schema
} {
	v1 := TestSchema()
	todos := func(edit func(tb *driver.Table)) driver.Schema { return schEdit(v1, 2, tTodos, edit) }
	return []struct {
		name   string
		schema driver.Schema
	}{
		{"drop a column", todos(func(tb *driver.Table) { tb.Columns = tb.Columns[:len(tb.Columns)-1] })},
		{"retype a column", todos(func(tb *driver.Table) { tb.Columns[5].Type = driver.TypeFloat })},
		{"reorder columns", todos(func(tb *driver.Table) { tb.Columns[1], tb.Columns[2] = tb.Columns[2], tb.Columns[1] })},
		{"rename a column", todos(func(tb *driver.Table) { tb.Columns[1].Name = "heading" })},
		{"append a non-nullable column", todos(func(tb *driver.Table) {
			tb.Columns = append(tb.Columns, driver.Column{Name: "note", Type: driver.TypeString})
		})},
		{"insert a nullable column before the last one", todos(func(tb *driver.Table) {
			last := tb.Columns[len(tb.Columns)-1]
			tb.Columns = append(tb.Columns[:len(tb.Columns)-1], driver.Column{Name: "note", Type: driver.TypeString, Nullable: true}, last)
		})},
		{"make a column nullable", todos(func(tb *driver.Table) { tb.Columns[1].Nullable = true })},
		{"make a nullable column non-nullable", schEdit(v1, 2, tKinds, func(tb *driver.Table) { tb.Columns[2].Nullable = false })},
		{"change the primary key", schEdit(v1, 2, tUsers, func(tb *driver.Table) { tb.PrimaryKey = "email" })},
		{"drop a scope", todos(func(tb *driver.Table) { tb.Scopes = tb.Scopes[:1] })},
		{"bind a scope variable to another column", schEdit(v1, 2, tUsers, func(tb *driver.Table) { tb.Scopes[0].Column = "email" })},
		{"add a table and drop a column", func() driver.Schema {
			s := todos(func(tb *driver.Table) { tb.Columns = tb.Columns[:len(tb.Columns)-1] })
			s.Tables = append([]driver.Table{schTagsTable()}, s.Tables...)
			return s
		}()},
		{"retire a table and retype a column", func() driver.Schema {
			return schWithout(todos(func(tb *driver.Table) { tb.Columns[5].Type = driver.TypeString }), 2, tUsers)
		}()},
	}
}

// schEnsureRetrying calls EnsureSchema, retrying while an optimistic engine
// reports a lost race (TX-9); any other error is returned.
func schEnsureRetrying(ctx context.Context, conn driver.Conn, s driver.Schema) error {
	var err error
	for range 10 {
		if err = conn.EnsureSchema(ctx, s); driver.CodeOf(err) != driver.CodeWriteConflict {
			return err
		}
	}
	return err
}

// schChain is the step-n schema of the interrupted-migration case: todos
// appends nullable integer columns c2…cn and keeps only the index ix_n;
// the table step_n replaces step_(n-1) (added, then retired next step).
func schChain(n int64) driver.Schema {
	s := schEdit(TestSchema(), n, tTodos, func(tb *driver.Table) {
		for i := int64(2); i <= n; i++ {
			tb.Columns = append(tb.Columns, driver.Column{Name: fmt.Sprintf("c%d", i), Type: driver.TypeInteger, Nullable: true})
		}
		tb.Indexes = []driver.Index{{Name: fmt.Sprintf("ix_%d", n), Columns: []string{fmt.Sprintf("c%d", n)}}}
	})
	step := schTagsTable()
	step.Name = fmt.Sprintf("step_%d", n)
	s.Tables = append(s.Tables, step)
	return s
}

// schChainTodo returns todos row id at step n, with cK = k for every k, or
// NULL in every added column when null is set.
func schChainTodo(id string, n int64, null bool) driver.Row {
	r := todo(id, "p1", "o1")
	for i := int64(2); i <= n; i++ {
		r.Values[fmt.Sprintf("c%d", i)] = nil
		if !null {
			r.Values[fmt.Sprintf("c%d", i)] = i
		}
	}
	return r
}

// schChainCheck checks that step n is the layout in force on conn.
func schChainCheck(t T, conn driver.Conn, n int64) {
	t.Helper()
	ctx := t.Context()
	what := fmt.Sprintf("SCH-7: after the migration to version %d", n)
	must(t, what+": EnsureSchema again", conn.EnsureSchema(ctx, schChain(n)))
	row, tag := schChainTodo(fmt.Sprintf("t-%d", n), n, false), schTag("g1", "g", "label")
	tx := begin(t, conn, "p1")
	defer tx.Rollback(context.Background())
	must(t, what+": UpsertRow(todos) with every appended column", tx.UpsertRow(ctx, tTodos, row))
	must(t, what+": UpsertRow into the added table", tx.UpsertRow(ctx, fmt.Sprintf("step_%d", n), tag))
	commit(t, tx)
	schExpectRow(t, what, conn, "p1", tTodos, row)
	schExpectRow(t, what+": version-1 row", conn, "p1", tTodos, schChainTodo("t1", n, true))
	schExpectRow(t, what, conn, "p1", fmt.Sprintf("step_%d", n), tag)
	if n > 2 {
		_, _, err := conn.GetRow(ctx, "p1", fmt.Sprintf("step_%d", n-1), "g1")
		expectCode(t, what+": retired table step_"+fmt.Sprint(n-1), err, driver.CodeUnknownTable)
	}
}

// schCountdownCtx is a context that cancels itself on the k-th call of
// Done: each k interrupts a migration at a different point of the
// driver's work, deterministically for a given driver.
type schCountdownCtx struct {
	context.Context
	mu    gosync.Mutex
	k     int // Done calls before the cancellation
	left  int
	fired bool
	done  chan struct{}
}

func schCountdown(parent context.Context, k int) *schCountdownCtx {
	return &schCountdownCtx{Context: parent, k: k, left: k, done: make(chan struct{})}
}

func (c *schCountdownCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fired {
		if c.left--; c.left <= 0 {
			c.fired = true
			close(c.done)
		}
	}
	return c.done
}

func (c *schCountdownCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired {
		return context.Canceled
	}
	return c.Context.Err()
}

// calls returns how many times Done was called.
func (c *schCountdownCtx) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.k - c.left
}

func (c *schCountdownCtx) hasFired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

func init() {
	register(
		// Catches a driver that cannot migrate in place: old rows missing
		// the appended column (or not NULL in it), indexes not added or not
		// dropped, a retired table still readable, history lost.
		Case{Name: "SCH-6/additive-migration", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			t1, t2 := todo("t1", "p1", "o1"), todo("t2", "p1", "o2")
			k1 := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{
				"id": "k1", "grp": "g", "s": "s", "i": nil, "f": nil, "b": nil, "j": nil, "x": nil}}
			u1, u2 := user("u1", "org", "a@example.com"), user("u2", "org", "b@example.com")
			push(t, conn, "p1", tTodos, t1, t2)
			push(t, conn, "p1", tKinds, k1)
			push(t, conn, "p1", tUsers, u1, u2)
			must(t, "SCH-6: EnsureSchema(version 2)", conn.EnsureSchema(ctx, schV2()))
			t1.Values["note"], t2.Values["note"] = nil, nil
			schExpectRow(t, "SCH-6: old row reads NULL in the appended column", conn, "p1", tTodos, t1)
			got, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"p1"}}, Limit: 10})
			must(t, "SCH-6: ScanRows(todos)", err)
			expectEqual(t, "SCH-6: ScanRows of old rows after appending a column", []driver.Row{t1, t2}, rowsByID(got))

			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			inTx, found, err := tx.GetRow(ctx, tTodos, "t2")
			if err != nil || !found {
				t.Fatalf("SCH-6: Tx.GetRow(todos, t2) = found %v, err %v", found, err)
			}
			expectEqual(t, "SCH-6: old row read inside a Tx", t2, inTx)
			t3, u3, tag := schTodoV2("t3", "p1", "o1", "hello"), user("u3", "org", "a@example.com"), schTag("g1", "g", "label")
			must(t, "SCH-6: UpsertRow(todos) using the appended column", tx.UpsertRow(ctx, tTodos, t3))
			dup := schTodoV2("t4", "p1", "o1", nil)
			dup.Values["title"] = t1.Values["title"]
			expectCode(t, "SCH-6: added unique index by_title", tx.UpsertRow(ctx, tTodos, dup), driver.CodeConstraintViolation)
			must(t, "SCH-6: UpsertRow(users) repeating an email after the unique index was dropped", tx.UpsertRow(ctx, tUsers, u3))
			must(t, "SCH-6: UpsertRow into the added table", tx.UpsertRow(ctx, tTags, tag))
			_, _, err = tx.GetRow(ctx, tKinds, "k1")
			expectCode(t, "SCH-6: Tx.GetRow of the retired table", err, driver.CodeUnknownTable)
			expectCode(t, "SCH-6: Tx.UpsertRow into the retired table", tx.UpsertRow(ctx, tKinds, k1), driver.CodeUnknownTable)
			seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc-v2", CreatedAtMs: 2,
				Changes: []driver.Change{upsertChange(tTodos, t3), upsertChange(tUsers, u3), upsertChange(tTags, tag)}})
			must(t, "SCH-6: AppendCommit", err)
			expectEqual(t, "SCH-6: first commit after the migration (the counter survives)", int64(4), seq)
			commit(t, tx)

			schExpectRow(t, "SCH-6: new todos row", conn, "p1", tTodos, t3)
			schExpectRow(t, "SCH-6: users row with a repeated email", conn, "p1", tUsers, u3)
			schExpectRow(t, "SCH-6: users row written before the migration", conn, "p1", tUsers, u1)
			schExpectRow(t, "SCH-6: row of the added table", conn, "p1", tTags, tag)
			_, _, err = conn.GetRow(ctx, "p1", tKinds, "k1")
			expectCode(t, "SCH-6: Conn.GetRow of the retired table", err, driver.CodeUnknownTable)
			_, err = conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tKinds, Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 10})
			expectCode(t, "SCH-6: Conn.ScanRows of the retired table", err, driver.CodeUnknownTable)
			for _, w := range []struct {
				table  string
				filter driver.ScopeFilter
				want   []int64
			}{{tTodos, driver.ScopeFilter{"project": {"p1"}}, []int64{1, 4}}, {tUsers, driver.ScopeFilter{"org": {"org"}}, []int64{3, 4}}} {
				win, err := conn.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: w.table, Filter: w.filter, ThroughSeq: 4, LimitChanges: 100})
				must(t, "SCH-6: ReadCommitWindow("+w.table+")", err)
				expectEqual(t, "SCH-6: commit history of "+w.table+" kept across the migration", w.want, seqs(win))
			}
		}},
		// Catches a driver that "retires" a table by hiding it, so its old
		// rows (or unique-index entries) come back when it is re-added.
		Case{Name: "SCH-6/retired-table-readded-empty", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			k1 := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{
				"id": "k1", "grp": "g", "s": "old", "i": int64(1), "f": nil, "b": nil, "j": nil, "x": nil}}
			push(t, conn, "p1", tKinds, k1)
			must(t, "SCH-6: EnsureSchema(version 2) retiring kinds", conn.EnsureSchema(ctx, schV2()))
			must(t, "SCH-6: EnsureSchema(version 3) adding kinds back", conn.EnsureSchema(ctx, schV3()))
			_, found, err := conn.GetRow(ctx, "p1", tKinds, "k1")
			if err != nil || found {
				t.Errorf("SCH-6: GetRow of a row of a retired then re-added table = found %v, err %v; want not found, nil", found, err)
			}
			rows, err := conn.ScanRows(ctx, "p1", driver.ScanQuery{Table: tKinds, Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 10})
			must(t, "SCH-6: ScanRows(kinds)", err)
			expectEqual(t, "SCH-6: ScanRows of a re-added table (old row-scope entries must be gone)", []driver.Row(nil), rows)
			k1.Values["s"], k1.Values["f"] = "new", 2.5
			expectEqual(t, "SCH-6: next commit seq (history kept, the counter survives)", int64(2), push(t, conn, "p1", tKinds, k1))
			schExpectRow(t, "SCH-6: row written into the re-added table", conn, "p1", tKinds, k1)
		}},
		// Catches a driver that applies any change beyond SCH-6's list, or
		// applies the allowed part of a schema (a new table) before
		// failing on the rest.
		Case{Name: "SCH-6/unsupported-changes-change-nothing", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			for _, v := range schUnsupported() {
				expectCode(t, "SCH-6: EnsureSchema(version 2) that would "+v.name, conn.EnsureSchema(ctx, v.schema),
					driver.CodeSchemaMigrationUnsupported)
				_, _, err := conn.GetRow(ctx, "p1", tTags, "x")
				expectCode(t, "SCH-6: table tags after the rejected migration that would "+v.name, err, driver.CodeUnknownTable)
			}
			schExpectRow(t, "SCH-6: row after the rejected migrations", conn, "p1", tTodos, t1)
			schExpectV1Layout(t, conn, "SCH-6")
			if h.Reopen != nil {
				schExpectV1Layout(t, h.Reopen(t, conn), "SCH-6 (stored layout, seen by a new Conn)")
			}
			must(t, "SCH-6: a valid migration after the rejected ones", conn.EnsureSchema(ctx, schV2()))
			schExpectV2Layout(t, conn, "SCH-6")
		}},
		// Catches a driver whose migration is not atomic: interrupted at
		// some point, it leaves a half-applied layout that the re-run
		// cannot complete (or a cache that disagrees with the store).
		Case{Name: "SCH-7/interrupted-migration-reruns", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("t1", "p1", "o1"))
			// One uninterrupted migration counts the driver's context
			// checks; about 24 interruption points spread over that range
			// follow, each on the next step of the chain.
			counter := schCountdown(ctx, math.MaxInt)
			must(t, "SCH-7: EnsureSchema(version 2)", conn.EnsureSchema(counter, schChain(2)))
			schChainCheck(t, conn, 2)
			stride := max(1, counter.calls()/24)
			cur, tried := int64(2), 0
			for k := 1; tried < 40; k += stride {
				next := cur + 1
				cctx := schCountdown(ctx, k)
				err := conn.EnsureSchema(cctx, schChain(next))
				fired := cctx.hasFired()
				if err != nil {
					if !fired {
						t.Fatalf("SCH-7: EnsureSchema(version %d) failed without an interruption: %v", next, err)
					}
					if driver.CodeOf(err) == "" {
						t.Errorf("ERR-1: interrupted EnsureSchema returned %T %v; want a *driver.Error", err, err)
					}
					must(t, fmt.Sprintf("SCH-7: re-run of the migration to version %d interrupted at ctx check %d", next, k),
						conn.EnsureSchema(ctx, schChain(next)))
				}
				cur = next
				schChainCheck(t, conn, cur)
				if !fired || t.Failed() {
					break // the migration finished before the k-th check: every point is covered
				}
				tried++
			}
			t.Logf("SCH-7: interrupted the migration at %d points (every %d context checks)", tried, stride)
			if h.Reopen != nil {
				schChainCheck(t, h.Reopen(t, conn), cur)
			}
		}},
		// Catches a driver whose concurrent migrations fail ("table already
		// exists"), apply twice (duplicate column) or leave an instance
		// with a stale layout.
		Case{Name: "SCH-7/concurrent-migration", Run: func(t T, h Harness) {
			if h.Reopen == nil {
				t.Skipf("SCH-7: needs Harness.Reopen")
			}
			ctx := t.Context()
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			k1 := driver.Row{ID: "k1", ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{
				"id": "k1", "grp": "g", "s": nil, "i": int64(math.MaxInt64), "f": nil, "b": nil, "j": nil, "x": nil}}
			push(t, conn, "p1", tTodos, t1)
			push(t, conn, "p1", tKinds, k1)
			conns := []driver.Conn{conn, h.Reopen(t, conn), h.Reopen(t, conn)}
			must(t, "SCH-7: EnsureSchema(version 1) on the second Conn", conns[1].EnsureSchema(ctx, TestSchema()))
			for _, target := range []driver.Schema{schV2(), schV3()} {
				errs := make([]error, len(conns))
				start := make(chan struct{})
				var wg gosync.WaitGroup
				for i, c := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						errs[i] = schEnsureRetrying(ctx, c, target)
					}()
				}
				close(start)
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("SCH-7: concurrent EnsureSchema(version %d) on Conn %d: %v; want nil", target.Version, i, err)
					}
				}
				for i, c := range conns {
					must(t, fmt.Sprintf("SCH-7: re-run of version %d on Conn %d", target.Version, i), c.EnsureSchema(ctx, target))
					max, err := c.MaxCommitSeq(ctx, "p1")
					must(t, "MaxCommitSeq", err)
					expectEqual(t, fmt.Sprintf("SCH-7: MaxCommitSeq on Conn %d after the migration", i), int64(2), max)
					t1.Values["note"] = nil
					schExpectRow(t, fmt.Sprintf("SCH-7: version-1 row on Conn %d", i), c, "p1", tTodos, t1)
					_, found, err := c.GetRow(ctx, "p1", tKinds, "k1")
					if target.Version == 2 {
						expectCode(t, fmt.Sprintf("SCH-7: retired kinds on Conn %d", i), err, driver.CodeUnknownTable)
					} else if err != nil || found {
						t.Errorf("SCH-7: re-added kinds on Conn %d: GetRow = found %v, err %v; want empty", i, found, err)
					}
				}
			}
			// Every instance writes through the final layout; another reads it.
			tg, k2 := schTag("g1", "g", "label"), k1
			k2.ID, k2.Values = "k2", driver.Values{"id": "k2", "grp": "g", "s": "s", "i": nil, "f": 0.5, "b": false, "j": nil, "x": []byte{}}
			for i, c := range conns {
				p := fmt.Sprintf("w%d", i)
				tx := begin(t, c, p)
				defer tx.Rollback(context.Background())
				must(t, "SCH-7: UpsertRow(tags) after the concurrent migrations", tx.UpsertRow(ctx, tTags, tg))
				must(t, "SCH-7: UpsertRow(kinds) after the concurrent migrations", tx.UpsertRow(ctx, tKinds, k2))
				commit(t, tx)
				other := conns[(i+1)%len(conns)]
				schExpectRow(t, fmt.Sprintf("SCH-7: tags row written by Conn %d", i), other, p, tTags, tg)
				schExpectRow(t, fmt.Sprintf("SCH-7: kinds row written by Conn %d", i), other, p, tKinds, k2)
			}
		}},
	)
}

package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/ssp2"
)

// TestRoundValidators: Config.Validate and Config.ValidateCommit (SPEC
// §6.7, §6.8) — a host rejection's code and details reach PUSH_RESULT,
// are stored and replayed without validating again; a plain error is
// sync.constraint_violation; a reserved code fails the request and
// stores nothing; the commit validator reads the candidate state.
func TestRoundValidators(t *testing.T) {
	var mu gosync.Mutex
	calls := 0
	validate := func(_ context.Context, id Identity, v OpValidation) error {
		mu.Lock()
		calls++
		mu.Unlock()
		if id.ActorID != "alice" || v.Table != "tasks" {
			return errors.New("unexpected input")
		}
		switch title, _ := v.Row["title"].(string); title {
		case "bad":
			return &Rejection{Code: "app.bad_title", Message: "no", Details: `{"fieldPaths":["title"],"reason":"bad"}`}
		case "boom":
			return errors.New("the validator crashed")
		case "reserved":
			return &Rejection{Code: "sync.mine", Message: "a host bug"}
		case "renamed":
			if v.Stored == nil || v.Stored["title"] != "first" || v.StoredVersion != 1 {
				return errors.New("the stored row is not the one before the op")
			}
		}
		return nil
	}
	validateCommit := func(ctx context.Context, r CandidateReader, c CommitValidation) error {
		if len(c.Ops) != 2 || c.ClientCommitID != "agg" {
			return nil
		}
		row, found, err := r.GetRow(ctx, "tasks", "t9")
		if err != nil {
			return err
		}
		if !found || row.Values["title"] != "second" || c.Ops[1].NextVersion != 1 {
			return errors.New("the candidate state lacks the staged sibling")
		}
		return &Rejection{Code: "app.aggregate", Message: "no aggregate", OpIndex: 1}
	}
	e := newEnv(t, sqliteLane(), func(c *Config) { c.Validate, c.ValidateCommit = validate, validateCommit })
	e.grant("alice", map[string][]string{"project_id": {"p1"}})
	ep := e.epoch("alice", "c1")
	commits := []*ssp2.PushCommit{
		commit("k1", upsert("tasks", "t1", e.task("t1", "p1", "first"))),
		commit("k2", upsert("tasks", "t1", e.task("t1", "p1", "renamed"), 1), upsert("tasks", "t2", e.task("t2", "p1", "bad"))),
		commit("k3", upsert("tasks", "t3", e.task("t3", "p1", "boom"))),
		commit("agg", upsert("tasks", "t8", e.task("t8", "p1", "first")), upsert("tasks", "t9", e.task("t9", "p1", "second"))),
	}
	check := func(m *ssp2.Message, what string, replay bool) {
		t.Helper()
		res := framesOf[*ssp2.PushResult](m)
		if len(res) != 4 {
			t.Fatalf("%s: %d results", what, len(res))
		}
		want := ssp2.PushApplied
		if replay {
			want = ssp2.PushCached
		}
		if res[0].Status != want {
			t.Fatalf("%s: k1 %+v", what, res[0])
		}
		for i, w := range []struct {
			code string
			op   int32
		}{{"app.bad_title", 1}, {"sync.constraint_violation", 0}, {"app.aggregate", 1}} {
			r := res[i+1]
			if r.Status != ssp2.PushRejected || r.Results[0].Code != w.code || r.Results[0].OpIndex != w.op || r.Results[0].Retryable {
				t.Fatalf("%s: commit %d: %+v, want %s at op %d", what, i+1, r.Results, w.code, w.op)
			}
			if w.code == "sync.constraint_violation" && strings.Contains(r.Results[0].Message, "unique index") {
				t.Fatalf("%s: a validator's generic rejection reads %q, the engine's unique-index wording", what, r.Results[0].Message)
			}
		}
		d := framesOf[*ssp2.PushResultDetails](m)
		if len(d) != 1 || d[0].ClientCommitID != "k2" || string(d[0].Entries[0].Details) != `{"fieldPaths":["title"],"reason":"bad"}` {
			t.Fatalf("%s: details %+v", what, d)
		}
	}
	check(e.sync("alice", 2, append([]ssp2.Frame{hdr("c1", ep)}, framesAsAny(commits)...)...), "first", false)
	mu.Lock()
	before := calls
	mu.Unlock()
	check(e.sync("alice", 2, append([]ssp2.Frame{hdr("c1", ep)}, framesAsAny(commits)...)...), "replay", true)
	mu.Lock()
	if calls != before {
		t.Fatalf("the replay validated again: %d calls, then %d", before, calls)
	}
	mu.Unlock()
	for _, id := range []string{"t2", "t3", "t8", "t9"} {
		if _, found, _ := e.store.GetRow(context.Background(), "p1", "tasks", id); found {
			t.Fatalf("row %s of a rejected commit is stored", id)
		}
	}
	if row, _, _ := e.store.GetRow(context.Background(), "p1", "tasks", "t1"); row.Values["title"] != "first" {
		t.Fatalf("t1 = %v: the rejected commit's first op stayed", row.Values)
	}

	res := e.post("alice", req(2, hdr("c1", ep), commit("k4", upsert("tasks", "t4", e.task("t4", "p1", "reserved")))))
	if res.status != http.StatusServiceUnavailable || res.err["code"] != "sync.rate_limited" {
		t.Fatalf("a reserved host code: status %d %v, want the server failure's 503 sync.rate_limited", res.status, res.err)
	}
	if _, found, _ := e.store.GetPushResult(context.Background(), "p1", "c1", "k4"); found {
		t.Fatal("a reserved host code stored a result")
	}
}

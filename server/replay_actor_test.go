package server

import (
	"testing"

	"github.com/syncstore/syncstore/ssp2"
)

// TestReplayUnderAnotherActorsClientID: a client id is bound to the actor
// that first used it (SPEC §1.5, CR-7), so another actor's request under
// it is refused at request level with sync.invalid_client_id — also when
// it reuses one of the owner's clientCommitIds: never the owner's stored
// result (a rejected conflict's server row may lie outside the other
// actor's scopes).
func TestReplayUnderAnotherActorsClientID(t *testing.T) {
	e := newEnv(t, sqliteLane())
	e.grant("alice", map[string][]string{"project_id": {"*"}})
	e.grant("mallory", map[string][]string{"project_id": {"m"}})
	ep := e.epoch("alice", "a")
	e.sync("alice", 2, hdr("a", ep), commit("k1", upsert("tasks", "s1", e.task("s1", "secret", "top secret"), 0)))
	e.sync("alice", 2, hdr("a", ep), commit("k2", upsert("tasks", "s1", e.task("s1", "secret", "again"), 0)))
	for _, k := range []string{"k1", "k2"} {
		res := e.post("mallory", req(2, hdr("a", ep), commit(k, upsert("tasks", "m1", e.task("m1", "m", "x")))))
		if res.status != 400 || errorCode(res) != "sync.invalid_client_id" {
			detail := ""
			if res.msg != nil {
				for _, pr := range framesOf[*ssp2.PushResult](res.msg) {
					for _, r := range pr.Results {
						if r.ServerRow != nil {
							detail += " serverRow=" + string(r.ServerRow)
						}
					}
					detail += " status=" + pr.Status.String()
				}
			}
			t.Errorf("mallory replays alice's %s under alice's client id: HTTP %d %v%s; want 400 sync.invalid_client_id", k, res.status, res.err, detail)
		}
	}
}

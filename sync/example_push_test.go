package sync_test

import (
	"context"
	"fmt"

	"github.com/syncstore/syncstore/sync"
)

// A host resolves what an actor may do per request and passes it to the
// one push it serves, without touching the Store's options. Here the
// request's ValidateOp keeps a row in the scope it was created in (an
// update cannot move it: the stored scope column is put back) and
// refuses edits of an archived note; the row, the logged change and the
// answer carry the values it returned.
func ExampleStore_PushWith() {
	ctx := context.Background()
	store, err := sync.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}
	push := func(commit string, o sync.PushOptions, ops ...sync.PushOp) sync.PushResponse {
		resp, err := store.PushWith(ctx, "tenant-1", sync.PushRequest{ClientID: "phone-1", ClientCommitID: commit,
			ActorID: "ana", Ops: ops}, o)
		if err != nil {
			panic(err)
		}
		return resp
	}
	note := func(body, proj string, base *int64) sync.PushOp {
		return sync.PushOp{Table: "notes", RowID: "n1", Op: sync.OpUpsert, BaseVersion: base,
			Values: sync.Values{"id": "n1", "proj": proj, "body": body}}
	}
	keepScopes := sync.PushOptions{ValidateOp: func(ctx context.Context, tx *sync.Tx, in sync.OpInput) (sync.Values, error) {
		if !in.Exists || in.Op.Op == sync.OpDelete {
			return nil, nil // a create: the values as pushed
		}
		if in.Current.Values["body"] == "archived" {
			return nil, &sync.Refusal{Code: "notes.archived", Message: "an archived note is read-only",
				Details: `{"reason":"note.archived","requiredAction":"unarchive"}`}
		}
		v := in.Op.Values // the hook's own copy
		v["proj"] = in.Current.Values["proj"]
		return v, nil
	}}

	push("c1", keepScopes, note("draft", "p7", sync.Version(0)))
	// An update that tries to move the note to p8, then another edit of
	// it in the same commit.
	resp := push("c2", keepScopes, note("edited", "p8", sync.Version(1)), note("archived", "p9", sync.Version(2)))
	for _, ch := range resp.Changes {
		fmt.Println(ch.Op, ch.RowVersion, ch.Scopes["project"], ch.Values["body"])
	}
	resp = push("c3", keepScopes, note("thawed", "p7", sync.Version(3)))
	fmt.Println(resp.Status, resp.Ops[0].Code, resp.Ops[0].Details)
	// Output:
	// upsert 2 p7 edited
	// upsert 3 p7 archived
	// rejected notes.archived {"reason":"note.archived","requiredAction":"unarchive"}
}

// A host runs a command as the server: a commit under a client id of the
// reserved server-command namespace, which client pushes cannot use. Run
// again under the same client commit id, it answers the stored result.
func ExampleStore_PushCommand() {
	ctx := context.Background()
	store, err := sync.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := store.EnsureSchema(ctx, notesSchema()); err != nil {
		panic(err)
	}
	cmd := sync.PushRequest{ClientID: sync.CommandClientID("daily-digest"), ClientCommitID: "2026-05-01", ActorID: "server",
		Ops: []sync.PushOp{{Table: "notes", RowID: "digest", Op: sync.OpUpsert,
			Values: sync.Values{"id": "digest", "proj": "p7", "body": "3 notes today"}}}}
	for range 2 {
		resp, err := store.PushCommand(ctx, "tenant-1", cmd, sync.PushOptions{})
		if err != nil {
			panic(err)
		}
		fmt.Println(cmd.ClientID, resp.Status, resp.CommitSeq, resp.Replayed)
	}
	_, err = store.Push(ctx, "tenant-1", cmd)
	fmt.Println(sync.CodeOf(err))
	// Output:
	// ["remote-command","daily-digest"] applied 1 false
	// ["remote-command","daily-digest"] applied 1 true
	// sync.invalid_client_id
}

package sqlite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/internal/faulttest"
)

// TestFanoutAcrossProcesses: a commit made by another process on the
// same file wakes a subscriber here (the polling half of SQLite's
// fanout; the in-process hub cannot see it), with the commit's seq.
func TestFanoutAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fan.db")
	ctx := context.Background()
	conn, err := Driver{}.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wakes, err := conn.(*Conn).SubscribeCommits(sctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFanoutChildPush$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SYNCSTORE_FANOUT_CHILD="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child push %d: %v\n%s", i, err, out)
		}
		timeout := time.After(30 * time.Second)
		for got := false; !got; {
			select {
			case w := <-wakes:
				got = w.Partition == "p1" && w.CommitSeq == int64(i+1)
			case <-timeout:
				t.Fatalf("no wake for the other process's commit %d", i+1)
			}
		}
	}
}

// TestFanoutChildPush is the other process of TestFanoutAcrossProcesses:
// it pushes one commit to p1 of the file it is given, then exits.
func TestFanoutChildPush(t *testing.T) {
	path := os.Getenv("SYNCSTORE_FANOUT_CHILD")
	if path == "" {
		t.Skip("runs only as TestFanoutAcrossProcesses's child process")
	}
	ctx := context.Background()
	conn, err := Driver{}.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	max, err := conn.MaxCommitSeq(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if err := faulttest.Push(ctx, conn, "p1", int(max)); err != nil {
		t.Fatal(err)
	}
}

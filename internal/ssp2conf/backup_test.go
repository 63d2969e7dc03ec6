package ssp2conf

import "testing"

// TestHostBackupControls: restoreBackup before a capture is refused; a
// capture, then a restore, answer and leave the instance serving (the
// catalog's backup-restore scenario drives the whole procedure).
func TestHostBackupControls(t *testing.T) {
	h := newHost(t, 0, 0)
	id := h.create("")
	ctl := func(op string, out any) int { return h.post("/i/"+id+"/ctl/"+op, nil, out) }
	var e struct{ Code string }
	if st := ctl("restoreBackup", &e); st != 400 || e.Code != "host.bad_request" {
		t.Fatalf("restore before capture: %d %s, want 400 host.bad_request", st, e.Code)
	}
	if st := ctl("captureBackup", nil); st != 200 {
		t.Fatalf("captureBackup: %d", st)
	}
	var out struct{ Rotated int }
	if st := ctl("restoreBackup", &out); st != 200 {
		t.Fatalf("restoreBackup: %d", st)
	}
	var seq struct{ Seq int64 }
	if st := ctl("getMaxCommitSeq", &seq); st != 200 || seq.Seq != 0 {
		t.Fatalf("after the restore: %d %+v", st, seq)
	}
	if st := ctl("close", nil); st != 200 {
		t.Fatalf("close: %d", st)
	}
}

package ssp2conf

import (
	"slices"
	"testing"
)

// crdtSchema is the catalog's crdt table with the given crdtType.
func crdtSchema(crdtType string) string {
	return `{"version":1,"tables":[{"name":"notes","primaryKey":"id",
 "columns":[{"name":"id","type":"string","nullable":false},
  {"name":"project_id","type":"string","nullable":false},
  {"name":"title","type":"string","nullable":false},
  {"name":"doc","type":"crdt","nullable":true,"crdtType":"` + crdtType + `"}],
 "scopes":[{"pattern":"project:{project_id}"}]}]}`
}

// TestHostCRDT: an instance serves a yjs-doc crdt column (the registry
// every instance gets); a crdtType it has no merger for is refused at
// create (server.New, SPEC §5.10.1).
func TestHostCRDT(t *testing.T) {
	h := newHost(t, 4, 0)
	var out struct{ ID, Code, Message string }
	if st := h.post("/instances", `{"schema":`+crdtSchema("yjs-doc")+`,"partition":"p","nowMs":1}`, &out); st != 200 || out.ID == "" {
		t.Fatalf("create with a yjs-doc column: %d %s %s", st, out.Code, out.Message)
	}
	h.host.mu.Lock()
	in := h.host.instances[out.ID]
	h.host.mu.Unlock()
	if caps := in.srv.Capabilities(); !slices.Contains(caps, "crdt") {
		t.Errorf("Capabilities() = %v, want crdt", caps)
	}
	out.Code = ""
	if st := h.post("/instances", `{"schema":`+crdtSchema("automerge")+`,"partition":"p","nowMs":1}`, &out); st == 200 || out.Code == "" {
		t.Fatalf("create with an unknown crdtType: %d %q", st, out.Code)
	}
}

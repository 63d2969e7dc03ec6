package schemaplan

import (
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/storelayout"
)

func TestDecide(t *testing.T) {
	v1 := driver.Schema{Version: 1, Tables: []driver.Table{{Name: "t", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}}}}}
	v2 := v1
	v2.Version = 2
	l1 := storelayout.LayoutOf(v1).Encode()
	l2 := storelayout.LayoutOf(v2).Encode()

	if a, _, err := Decide(0, "", v1, l1); a != Create || err != nil {
		t.Errorf("nothing stored: %v, %v; want Create", a, err)
	}
	if a, _, err := Decide(1, l1, v1, l1); a != Keep || err != nil {
		t.Errorf("same schema: %v, %v; want Keep", a, err)
	}
	if _, _, err := Decide(1, "{}", v1, l1); driver.CodeOf(err) != driver.CodeSchemaMismatch {
		t.Errorf("same version, other layout: %v; want schema_mismatch (SCH-4)", err)
	}
	if _, _, err := Decide(2, l2, v1, l1); driver.CodeOf(err) != driver.CodeSchemaNewer {
		t.Errorf("stored newer: %v; want schema_newer (SCH-5)", err)
	}
	a, old, err := Decide(1, l1, v2, l2)
	if a != Migrate || err != nil || len(old.Tables) != 1 || old.Tables[0].Name != "t" {
		t.Errorf("stored older: %v, %+v, %v; want Migrate from the stored layout", a, old, err)
	}
	if _, _, err := Decide(1, "not json", v2, l2); driver.CodeOf(err) != driver.CodeInternal {
		t.Errorf("undecodable stored layout: %v; want internal", err)
	}
}

package sqlitesql

import (
	"encoding/json"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// changesJSONReference is the reflection-based encoding ChangesJSON
// replaced: ChangesJSON must produce exactly its bytes (stored text, and
// D1 sends the same array).
func changesJSONReference(t testing.TB, changes []driver.Change) string {
	t.Helper()
	out := make([][6]any, len(changes))
	for i, ch := range changes {
		scopes := ch.Scopes
		if scopes == nil {
			scopes = driver.Scopes{}
		}
		var vals any
		var version int64
		if ch.Op == driver.OpUpsert {
			b, err := driver.EncodeValues(ch.Values)
			if err != nil {
				t.Fatal(err)
			}
			vals, version = string(b), ch.RowVersion
		}
		out[i] = [6]any{ch.Table, ch.RowID, string(ch.Op), scopes, vals, version}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tricky covers every escape class of encoding/json's string encoder.
var tricky = []string{
	"", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f",
	"\x00\x01\x1f\x7f", "é ü 日本 🎉", "line\u2028sep\u2029", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80",
}

func TestChangesJSONMatchesEncodingJSON(t *testing.T) {
	var changes []driver.Change
	for i, s := range tricky {
		changes = append(changes,
			driver.Change{Table: "todos", RowID: s, Op: driver.OpUpsert, RowVersion: int64(i*1000 - 3),
				Scopes: driver.Scopes{"project": s, "owner": "o" + s, s + "k": "v"},
				Values: driver.Values{"id": s, "title": s, "n": int64(i), "f": 1.5, "ok": i%2 == 0, "j": driver.JSON(`{"a":[1,"<"]}`), "x": []byte(s), "z": nil}},
			driver.Change{Table: s, RowID: "r", Op: driver.OpDelete, Scopes: driver.Scopes{"p": s}},
			driver.Change{Table: "t", RowID: s, Op: driver.OpUpsert, Values: driver.Values{}},
		)
	}
	changes = append(changes, driver.Change{Table: "t", RowID: "nil-scopes", Op: driver.OpDelete})
	for n := 0; n <= len(changes); n++ {
		got, err := ChangesJSON(changes[:n])
		if err != nil {
			t.Fatal(err)
		}
		if want := changesJSONReference(t, changes[:n]); got != want {
			t.Fatalf("ChangesJSON of %d changes:\n got %s\nwant %s", n, got, want)
		}
	}
}

func TestChangesJSONInvalidValue(t *testing.T) {
	_, err := ChangesJSON([]driver.Change{{Table: "t", RowID: "r", Op: driver.OpUpsert,
		Values: driver.Values{"c": struct{}{}}}})
	if driver.CodeOf(err) != driver.CodeInvalidValue {
		t.Fatalf("ChangesJSON with an unencodable value: %v, want CodeInvalidValue", err)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func BenchmarkChangesJSON(b *testing.B) {
	changes := make([]driver.Change, 10)
	for k := range changes {
		changes[k] = driver.Change{Table: "todos", RowID: "t0000000" + string(rune('0'+k)), Op: driver.OpUpsert, RowVersion: 1,
			Scopes: driver.Scopes{"project": "p7", "owner": "o12"},
			Values: driver.Values{"id": "t1", "title": "todo t1", "done": true, "project_id": "p7", "owner_id": "o12", "updated_at": int64(1700000000000)}}
	}
	b.Run("reflect", func(b *testing.B) {
		for b.Loop() {
			changesJSONReference(b, changes)
		}
	})
	b.Run("append", func(b *testing.B) {
		for b.Loop() {
			if _, err := ChangesJSON(changes); err != nil {
				b.Fatal(err)
			}
		}
	})
}

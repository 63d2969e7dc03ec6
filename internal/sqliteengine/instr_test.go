package sqliteengine

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestLinearInstrMatchesSQLite compares the linear instr of OpenDB with
// SQLite's built-in (a connection of the process's "sqlite" driver) on
// ordinary inputs: ASCII, multi-byte UTF-8, blobs, a blob next to a text,
// numbers (converted as SQLite converts them), NULLs, an empty needle or
// haystack, embedded NULs and invalid UTF-8.
func TestLinearInstrMatchesSQLite(t *testing.T) {
	builtin, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer builtin.Close()
	linear := OpenDB(":memory:")
	defer linear.Close()
	exprs := []string{
		`'hello', 'l'`, `'hello', 'lo'`, `'hello', 'x'`, `'hello', 'hello!'`, `'', ''`, `'', 'a'`, `'abc', ''`,
		`'héllo wörld', 'w'`, `'héllo wörld', 'ö'`, `'日本語テキスト', 'テ'`, `'👋 hi 👋', 'hi'`, `'a👋b👋c', 'c'`,
		`x'00ff00ff', x'ff00'`, `x'0102', x''`, `x'', x'01'`, `x'616263', 'c'`, `'abc', x'63'`, `x'c3a96263', 'b'`,
		`12345, 34`, `12345, '45'`, `1.5, '.'`, `-0.25, 5`, `1e300, 'e'`, `3.0, 0`, `123456789012, 9012`,
		`NULL, 'a'`, `'a', NULL`, `NULL, NULL`, `x'00', NULL`,
		`CAST(x'610062' AS TEXT), 'b'`, `CAST(x'80806162' AS TEXT), 'b'`, `CAST(x'61808062' AS TEXT), CAST(x'8062' AS TEXT)`,
		`CAST(x'c3a9c3a9' AS TEXT), CAST(x'a9' AS TEXT)`, `'aaaab', 'aab'`,
		`'x' || replace(hex(zeroblob(100)), '0', 'a') || 'é' || replace(hex(zeroblob(60)), '0', 'a') || 'b', replace(hex(zeroblob(40)), '0', 'a') || 'b'`,
		`'é' || replace(hex(zeroblob(300)), '0', 'ab'), 'b' || replace(hex(zeroblob(50)), '0', 'ab')`,
	}
	for _, e := range exprs {
		q := `SELECT instr(` + e + `), typeof(instr(` + e + `))`
		var want, got [2]any
		if err := builtin.QueryRow(q).Scan(&want[0], &want[1]); err != nil {
			t.Fatalf("built-in %s: %v", q, err)
		}
		if err := linear.QueryRow(q).Scan(&got[0], &got[1]); err != nil {
			t.Fatalf("linear %s: %v", q, err)
		}
		if want != got {
			t.Errorf("instr(%.80s): linear %v, SQLite %v", e, got, want)
		}
	}
	// Random haystacks and needles over a few bytes (a two-byte character,
	// a stray continuation byte), as text and as blobs, short needles and
	// needles over 64 bytes (the KMP path).
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := [][]byte{{'a'}, {'b'}, {0xc3, 0xa9}, {0x80}}
	gen := func(n int) []byte {
		var b []byte
		for range n {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		return b
	}
	for i := range 400 {
		h := gen(rng.IntN(300))
		var n []byte
		if i%2 == 0 && len(h) > 0 {
			a := rng.IntN(len(h))
			n = bytes.Clone(h[a : a+rng.IntN(min(len(h)-a, 120))+1])
		} else {
			n = gen(rng.IntN(4) + 1)
		}
		for _, cast := range []string{"CAST(? AS TEXT)", "?"} {
			q := fmt.Sprintf(`SELECT instr(%s, %s)`, cast, cast)
			var want, got sql.NullInt64
			if err := builtin.QueryRow(q, h, n).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if err := linear.QueryRow(q, h, n).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want != got {
				t.Fatalf("%s on %x, %x: linear %v, SQLite %v", q, h, n, got, want)
			}
		}
	}
}

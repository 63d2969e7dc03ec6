package querylang

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// MaxSearchPatternBytes bounds, in bytes, the pattern of a LIKE or GLOB
// (the operators, NOT forms included, and the functions like() and
// glob()) and the needle of instr() in an authoritative query: the sum of
// the lengths of the string literals, numbers, blob literals and bind
// values they are made of (AQ-6).
const MaxSearchPatternBytes = 256

// CheckSearchPatterns is the static cost rule of substring searches
// (AQ-6): the pattern of every LIKE/GLOB and the needle of every instr in
// sql (an admitted statement) must be string literals, numbers, blob
// literals and bind values (args, numbered as SQLite numbers ? and ?N)
// joined by `||` — a parenthesized one too — of at most
// MaxSearchPatternBytes in all. Otherwise BoundRewrite (Limit
// MaxSearchPatternBytes), before any engine sees the text.
//
// Why: each engine searches with an algorithm that costs O(len(text) ·
// len(pattern)) in the worst case inside one function call, where no
// timeout is checked — SQLite's LIKE/GLOB (patternCompare) and instr
// (a memcmp at every character), PostgreSQL's LIKE/ILIKE (MatchText)
// and strpos (Boyer–Moore–Horspool), MariaDB's instr/LOCATE. A pattern
// taken from a stored row ('%' || n.title || '%' with a title of 'a'×49,000
// + 'b' over a title of 'a'×1,000,000) ran 152 s in SQLite under a 1 s
// Timeout; PostgreSQL's backend outlived the call by minutes. With the
// pattern bounded, one call costs at most 256 × the text's length.
func CheckSearchPatterns(sql string, args []any) error {
	if searchOff.Load() {
		return nil
	}
	toks, err := Tokenize(sql)
	if err != nil {
		return err
	}
	var sig []Token // significant tokens
	var param []int // the parameter number of sig[i], 0 if none
	last := 0
	for _, tk := range toks {
		if tk.Kind == TokSpace {
			continue
		}
		n := 0
		if tk.Kind == TokParam {
			n, last = ParamNumber(sql[tk.Start:tk.End], last)
		}
		sig, param = append(sig, tk), append(param, n)
	}
	text := func(i int) string { return sql[sig[i].Start:sig[i].End] }
	isOp := func(i int, op string) bool { return i < len(sig) && sig[i].Kind == TokOp && text(i) == op }
	refuse := func(what string, at int) error {
		return driver.NewQueryLimitError(driver.BoundRewrite, MaxSearchPatternBytes, nil,
			fmt.Sprintf("authoritative query text (the %s at byte %d must be string literals and bind values joined by ||, at most %d bytes)",
				what, sig[at].Start, MaxSearchPatternBytes))
	}
	// chain reads literals and parameters joined by || from sig[i]: the
	// index after them and their bytes, or ok false.
	chain := func(i int) (next int, size int, ok bool) {
		for {
			if i >= len(sig) {
				return i, size, false
			}
			switch tk := sig[i]; tk.Kind {
			case TokString:
				size += len(UnquoteIdent(text(i)))
			case TokNumber:
				size += tk.End - tk.Start
			case TokBlob:
				size += (tk.End - tk.Start - 3) / 2
			case TokParam:
				if n := param[i]; n >= 1 && n <= len(args) {
					size += argBytes(args[n-1])
				}
			default:
				return i, size, false
			}
			if i++; !isOp(i, "||") {
				return i, size, true
			}
			i++
		}
	}
	for i := range sig {
		if sig[i].Kind != TokWord {
			continue
		}
		var what string
		var start int
		switch w := strings.ToLower(text(i)); {
		case w == "like" || w == "glob":
			what, start = strings.ToUpper(w)+" pattern", i+1
		case w == "instr" && isOp(i+1, "("):
			// The needle is the second argument: after the first comma
			// at the call's own depth.
			what, start = "instr needle", -1
			for j, depth := i+1, 0; j < len(sig); j++ {
				if sig[j].Kind != TokOp {
					continue
				}
				switch text(j) {
				case "(":
					depth++
				case ")":
					depth--
				case ",":
					if depth == 1 {
						start = j + 1
					}
				}
				if start >= 0 || depth == 0 {
					break
				}
			}
			if start < 0 {
				continue // instr() without a second argument: the engine refuses it
			}
		default:
			continue
		}
		// The pattern (or the function's first argument, like(P, S)),
		// possibly parenthesized.
		j, parens := start, 0
		for isOp(j, "(") {
			j, parens = j+1, parens+1
		}
		next, size, ok := chain(j)
		switch {
		case !ok:
			return refuse(what, i)
		case parens > 0 || what == "instr needle":
			ok = isOp(next, ")") || isOp(next, ",")
		default:
			// Nothing binding tighter than LIKE may extend the operand.
			if next < len(sig) && sig[next].Kind == TokOp {
				switch text(next) {
				case "*", "/", "%", "+", "-", "&", "|", "<<", ">>", "->", "->>", "~":
					ok = false
				}
			}
		}
		if !ok {
			return refuse(what, i)
		}
		if size > MaxSearchPatternBytes {
			return refuse(what, i)
		}
	}
	return nil
}

// argBytes is the size of bind value a as a pattern: a string's, []byte's
// or JSON document's length; 24 for any other (a number's text).
func argBytes(a any) int {
	switch x := a.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case driver.JSON:
		return len(x)
	case nil:
		return 0
	}
	return 24
}

// searchOff turns CheckSearchPatterns off (DisableSearchPatternCheckForTest).
var searchOff atomic.Bool

// DisableSearchPatternCheckForTest turns CheckSearchPatterns off,
// process-wide, until the returned func is called. Only for tests proving
// what an engine does with the shapes it refuses; never call it in a host.
func DisableSearchPatternCheckForTest() (restore func()) {
	searchOff.Store(true)
	return func() { searchOff.Store(false) }
}

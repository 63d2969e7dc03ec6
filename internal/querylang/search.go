package querylang

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// MaxSearchPatternBytes bounds, in bytes, the patterns of an
// authoritative query's substring searches, all of them together: of
// LIKE and GLOB (the operators, NOT forms included, and the functions
// like() and glob()), the needle of instr(), the pattern of replace() and
// the character set of trim()/ltrim()/rtrim() — the sum of the lengths of
// the string literals, numbers, blob literals and bind values they are
// made of (AQ-6).
const MaxSearchPatternBytes = 256

// CheckSearchPatterns is the static cost rule of substring searches
// (AQ-6): the pattern of every LIKE/GLOB, the needle of every instr, the
// pattern of every replace and the character set of every two-argument
// trim/ltrim/rtrim in sql (an admitted statement) must be string
// literals, numbers, blob literals and bind values (args, numbered as
// SQLite numbers ? and ?N) joined by `||`, any of them or any run of
// them parenthesized, and all of the text's patterns together must be at
// most MaxSearchPatternBytes; a quoted function name ("like"(p, s),
// [instr](s, n)) is the same function. Otherwise BoundRewrite (Limit
// MaxSearchPatternBytes), before any engine sees the text.
//
// Why: each engine searches with an algorithm that costs O(len(text) ·
// len(pattern)) in the worst case inside one function call, where no
// timeout is checked — SQLite's LIKE/GLOB (patternCompare), instr and
// replace (a memcmp at every character) and trim (every character
// against the whole set), PostgreSQL's LIKE/ILIKE (MatchText), strpos and
// replace (Boyer–Moore–Horspool) and btrim, MariaDB's instr/LOCATE. A
// pattern taken from a stored row ('%' || n.title || '%' with a title of
// 'a'×49,000 + 'b' over a title of 'a'×1,000,000) ran 152 s in SQLite
// under a 1 s Timeout; PostgreSQL's backend outlived the call by
// minutes; SQLite's trim of 'a'×20,000 by a set of 'b'×20,000+'a' ran
// 1.8 s. And SQLite checks its interrupt between rows, not between the
// calls of one row: ten LIKEs of a 252-byte pattern over a 1 MB value in
// one row ran 3.1 s under a 1 s Timeout, so the bound is shared by the
// text's calls. With it, one row's searches cost at most 256 × the
// text's length in all.
func CheckSearchPatterns(sql string, args []any) error {
	toks, err := Tokenize(sql)
	if err != nil {
		return err
	}
	return checkSearchPatterns(newSigText(sql, toks, args))
}

// checkSearchPatterns is CheckSearchPatterns over a text's token view.
func checkSearchPatterns(v *sigText) error {
	if searchOff.Load() {
		return nil
	}
	sig, param, text, isOp := v.sig, v.param, v.text, v.isOp
	refuse := func(what string, at int) error {
		return driver.NewQueryLimitError(driver.BoundRewrite, MaxSearchPatternBytes, nil,
			fmt.Sprintf("authoritative query text (the %s at byte %d must be string literals and bind values joined by ||, at most %d bytes with the text's other patterns)",
				what, sig[at].Start, MaxSearchPatternBytes))
	}
	// operand reads a pattern from sig[i]: terms joined by ||, each a
	// string literal, number, blob literal, bind value or a parenthesized
	// operand. It returns the index after the operand, its bytes, and ok
	// false if anything else is part of it. A parenthesized term is read
	// whole, so nothing can follow its closing parenthesis unseen
	// (('%') || n.title is one operand, a column included).
	var operand func(i int) (next int, size int, ok bool)
	term := func(i int) (int, int, bool) {
		if isOp(i, "(") {
			next, size, ok := operand(i + 1)
			if !ok || !isOp(next, ")") {
				return next, size, false
			}
			return next + 1, size, true
		}
		if i >= len(sig) {
			return i, 0, false
		}
		size := 0
		switch tk := sig[i]; tk.Kind {
		case TokString:
			size = len(UnquoteIdent(text(i)))
		case TokNumber:
			size = tk.End - tk.Start
		case TokBlob:
			size = (tk.End - tk.Start - 3) / 2
		case TokParam:
			if n := param[i]; n >= 1 && n <= len(v.args) {
				size = argBytes(v.args[n-1])
			}
		default:
			return i, 0, false
		}
		return i + 1, size, true
	}
	operand = func(i int) (int, int, bool) {
		size := 0
		for {
			next, n, ok := term(i)
			size += n
			if !ok || !isOp(next, "||") {
				return next, size, ok
			}
			i = next + 1
		}
	}
	// tighter: an operator binding tighter than LIKE would extend the
	// operand ending before sig[j].
	tighter := func(j int) bool {
		if j < len(sig) && sig[j].Kind == TokOp {
			switch text(j) {
			case "*", "/", "%", "+", "-", "&", "|", "<<", ">>", "->", "->>", "~", "||":
				return true
			}
		}
		return false
	}
	total := 0 // the bytes of the text's patterns so far
	for i := range sig {
		// A function's name may be quoted ("like"(p, s), [instr](s, n)):
		// SQLite calls it all the same.
		var w string
		switch sig[i].Kind {
		case TokWord:
			w = strings.ToLower(text(i))
		case TokQuotedID:
			if !isOp(i+1, "(") {
				continue
			}
			w = strings.ToLower(UnquoteIdent(text(i)))
		default:
			continue
		}
		var what string
		size, ok := 0, false
		switch w {
		case "like", "glob":
			what = strings.ToUpper(w) + " pattern"
			// The operator (x LIKE p, NOT LIKE) when the name is a word;
			// else, or if that reading fails, the function like(p, s[, e])
			// whose pattern is its first argument.
			if sig[i].Kind == TokWord {
				var next int
				next, size, ok = operand(i + 1)
				ok = ok && !tighter(next)
			}
			if !ok && isOp(i+1, "(") {
				var next int
				next, size, ok = operand(i + 2)
				ok = ok && isOp(next, ",")
			}
		case "instr", "replace", "trim", "ltrim", "rtrim":
			if !isOp(i+1, "(") {
				continue
			}
			// The needle (the pattern, the character set) is the second
			// argument: after the first comma at the call's own depth.
			what = map[string]string{"instr": "instr needle", "replace": "replace pattern"}[w]
			if what == "" {
				what = w + " character set"
			}
			start := -1
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
				continue // one argument: instr() is refused by the engine, trim(s) trims spaces
			}
			var next int
			next, size, ok = operand(start)
			ok = ok && (isOp(next, ")") || isOp(next, ","))
		default:
			continue
		}
		total += size
		if !ok || total > MaxSearchPatternBytes {
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

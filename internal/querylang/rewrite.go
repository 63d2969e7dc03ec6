package querylang

import (
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// This file is the shared toolkit of the drivers that rewrite a host's
// authoritative query (AQ-1…AQ-3) for an engine without SQLite's
// authorizer: the query, once admitted by CheckQueryText, is tokenized
// again and each driver turns the tokens into Pieces carrying its own
// engine's text; the helpers below walk the pieces (parentheses, the
// significant neighbours of a token), refuse calls outside the driver's
// allow-list, and put the driver's partition-restricted CTEs in front of
// the host's WITH list.

// Piece is one token of a query being rewritten: its kind, the text the
// target engine gets, and, for a word or quoted identifier, the name it
// spells lower-cased (for checks; empty for other kinds).
type Piece struct {
	Kind TokKind
	Text string
	Name string
}

// UnquoteIdent returns the name a quoted identifier ("x", [x], `x`) or a
// string ('x') spells: delimiters removed, doubled quotes undoubled. Any
// other text comes back unchanged.
func UnquoteIdent(s string) string {
	if len(s) < 2 {
		return s
	}
	switch q := s[0]; q {
	case '[':
		return s[1 : len(s)-1]
	case '"', '`', '\'':
		return strings.ReplaceAll(s[1:len(s)-1], string([]byte{q, q}), string(q))
	}
	return s
}

// Matching returns the index of the ")" closing the "(" at open, or -1.
func Matching(ps []Piece, open int) int {
	depth := 0
	for i := open; i < len(ps); i++ {
		if ps[i].Kind != TokOp {
			continue
		}
		switch ps[i].Text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// MatchingBack returns the index of the "(" opening the ")" at end, or -1.
func MatchingBack(ps []Piece, end int) int {
	depth := 0
	for i := end; i >= 0; i-- {
		if ps[i].Kind != TokOp {
			continue
		}
		switch ps[i].Text {
		case ")":
			depth++
		case "(":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// FirstSignificant returns the index of the first piece at or after from
// that is not whitespace or a comment, or -1.
func FirstSignificant(ps []Piece, from int) int {
	for i := from; i < len(ps); i++ {
		if ps[i].Kind != TokSpace {
			return i
		}
	}
	return -1
}

// LastSignificant returns the last piece that is not whitespace or a
// comment, or nil.
func LastSignificant(ps []Piece) *Piece {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Kind != TokSpace {
			return &ps[i]
		}
	}
	return nil
}

// CheckCalls refuses (CodeQueryInvalid, AQ-1) a call of a function
// outside allowed (lower-case names): a word followed by "(" — unless it
// names a CTE's or an alias's column list (`n(x) AS (…)`, `AS j(a, b)`) —
// or a quoted name followed by "(". Keywords that are followed by "("
// (IN, EXISTS, AS, OVER, …) must be in allowed too.
func CheckCalls(ps []Piece, allowed map[string]bool) error {
	for i, p := range ps {
		if p.Kind != TokWord && p.Kind != TokQuotedID {
			continue
		}
		j := FirstSignificant(ps, i+1)
		if j < 0 || ps[j].Text != "(" {
			continue
		}
		if p.Kind == TokWord && allowed[p.Name] {
			continue
		}
		if prev := LastSignificant(ps[:i]); prev != nil && prev.Name == "as" {
			continue // AS alias(columns)
		}
		if isCTEColumns(ps, i, j) {
			continue // WITH cte(columns) AS (…)
		}
		return driver.Errorf(driver.CodeQueryInvalid, "query calls a function it may not (AQ-1)")
	}
	return nil
}

// isCTEColumns reports whether the word at i, followed by "(" at open,
// starts a CTE with a column list: it follows WITH, RECURSIVE or a comma,
// and its ")" is followed by AS [NOT] [MATERIALIZED] "(". (A function
// with a column definition list after a comma in FROM looks alike; each
// driver's engine-side check must refuse what such a call reads.)
func isCTEColumns(ps []Piece, i, open int) bool {
	prev := LastSignificant(ps[:i])
	if prev == nil || (prev.Name != "with" && prev.Name != "recursive" && prev.Text != ",") {
		return false
	}
	end := Matching(ps, open)
	if end < 0 {
		return false
	}
	k := FirstSignificant(ps, end+1)
	if k < 0 || ps[k].Name != "as" {
		return false
	}
	for k = FirstSignificant(ps, k+1); k >= 0 && (ps[k].Name == "not" || ps[k].Name == "materialized"); k = FirstSignificant(ps, k+1) {
	}
	return k >= 0 && ps[k].Text == "("
}

// PrependCTEs returns the statement ps (rendered by render) with ctes —
// "name AS (…), …", already in the engine's text — as the first entries
// of its WITH list: merged into the host's own WITH [RECURSIVE] list when
// the statement starts with one, otherwise as a new WITH clause. The
// host's CTEs come after the driver's, so they may read them, and a host
// CTE named like one of them is a duplicate name the engine refuses.
func PrependCTEs(ps []Piece, ctes string, render func([]Piece) string) string {
	first := FirstSignificant(ps, 0)
	if first >= 0 && ps[first].Name == "with" {
		rest := ps[first+1:]
		kw := "WITH "
		if j := FirstSignificant(rest, 0); j >= 0 && rest[j].Name == "recursive" {
			kw, rest = "WITH RECURSIVE ", rest[j+1:]
		}
		return kw + ctes + ", " + strings.TrimSpace(render(rest))
	}
	return "WITH " + ctes + " " + strings.TrimSpace(render(ps))
}

// CallNesting returns how deeply calls of the (lower-case) function name
// nest inside each other's arguments in ps: 0 when it is not called, 1
// for replace(x, …), 2 for replace(replace(x, …), …). One pass, linear
// in ps. Drivers bound functions that build values whose size multiplies
// per level (AQ-6).
func CallNesting(ps []Piece, name string) int {
	var stack []bool // one entry per open "(": whether it opens a call of name
	depth, deepest := 0, 0
	lastWord := -1
	for i, p := range ps {
		switch {
		case p.Kind == TokSpace:
			continue
		case p.Kind == TokOp && p.Text == "(":
			call := lastWord >= 0 && ps[lastWord].Name == name
			stack = append(stack, call)
			if call {
				depth++
				deepest = max(deepest, depth)
			}
		case p.Kind == TokOp && p.Text == ")":
			if n := len(stack); n > 0 {
				if stack[n-1] {
					depth--
				}
				stack = stack[:n-1]
			}
		}
		if p.Kind == TokWord || p.Kind == TokQuotedID {
			lastWord = i
		} else {
			lastWord = -1
		}
	}
	return deepest
}

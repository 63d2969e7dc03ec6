package querylang

import "strings"

// Helpers for the dialect-parity rewrites (AQ-5) of the drivers that turn
// a host's authoritative query into another engine's SQL: delimiting an
// operand of SQLite's grammar in a piece list, so a driver can wrap it
// (x / NULLIF(y, 0)) or type it, and the terms of an ORDER BY clause. A
// helper that cannot delimit something soundly says so (-1 / false); the
// driver then refuses the query (CodeQueryInvalid) rather than guess.

// PrimaryEnd returns the index of the last piece of the primary
// expression starting at the significant piece start: a literal, a
// parameter, a name (a.b.c), a call (f(…) with an optional FILTER (…)
// and OVER (…) or OVER name), a parenthesized expression or sub-query,
// or CASE … END. isKeyword reports words that cannot start a primary
// (SELECT, NOT, …; NULL and the like are literals, not keywords). -1 when
// start is no primary or its end cannot be found.
func PrimaryEnd(ps []Piece, start int, isKeyword func(name string) bool) int {
	if start < 0 || start >= len(ps) {
		return -1
	}
	p := ps[start]
	switch p.Kind {
	case TokString, TokNumber, TokBlob, TokParam:
		return start
	case TokOp:
		if p.Text == "(" {
			return Matching(ps, start)
		}
		return -1
	case TokWord, TokQuotedID:
	default:
		return -1
	}
	if p.Kind == TokWord && p.Name == "case" {
		depth := 0
		for i := start; i < len(ps); i++ {
			switch ps[i].Name {
			case "case":
				depth++
			case "end":
				if depth--; depth == 0 {
					return i
				}
			}
		}
		return -1
	}
	if n := FirstSignificant(ps, start+1); n >= 0 && ps[n].Text == "(" {
		end := Matching(ps, n)
		if end < 0 {
			return -1
		}
		for {
			k := FirstSignificant(ps, end+1)
			if k < 0 || (ps[k].Name != "filter" && ps[k].Name != "over") {
				return end
			}
			o := FirstSignificant(ps, k+1)
			switch {
			case o >= 0 && ps[o].Text == "(":
				if end = Matching(ps, o); end < 0 {
					return -1
				}
			case o >= 0 && ps[k].Name == "over" && (ps[o].Kind == TokWord || ps[o].Kind == TokQuotedID):
				end = o
			default:
				return -1
			}
		}
	}
	if p.Kind == TokWord && isKeyword(p.Name) {
		return -1
	}
	end := start
	for {
		d := FirstSignificant(ps, end+1)
		if d < 0 || ps[d].Text != "." {
			return end
		}
		n := FirstSignificant(ps, d+1)
		if n < 0 || !(ps[n].Kind == TokWord || ps[n].Kind == TokQuotedID || ps[n].Text == "*") {
			return -1
		}
		end = n
	}
}

// MulOperandEnd returns the index of the last piece of the right operand
// of a multiplicative operator (*, /, %) whose first significant piece is
// start: unary operators (-, +, ~), then a primary (PrimaryEnd), then an
// optional COLLATE name. SQLite binds ||, -> and ->> tighter than the
// multiplicative operators, other engines do not: when one follows, the
// operand is not delimited (-1) and the driver must refuse.
func MulOperandEnd(ps []Piece, start int, isKeyword func(string) bool) int {
	op := func(i int) string { return strings.TrimSpace(ps[i].Text) }
	for start >= 0 && ps[start].Kind == TokOp && (op(start) == "-" || op(start) == "+" || op(start) == "~") {
		start = FirstSignificant(ps, start+1)
	}
	end := PrimaryEnd(ps, start, isKeyword)
	if end < 0 {
		return -1
	}
	if k := FirstSignificant(ps, end+1); k >= 0 && ps[k].Name == "collate" {
		if end = FirstSignificant(ps, k+1); end < 0 {
			return -1
		}
	}
	if k := FirstSignificant(ps, end+1); k >= 0 && (op(k) == "||" || op(k) == "->" || op(k) == "->>") {
		return -1
	}
	return end
}

// OrderTerm is one term of an ORDER BY clause: its first and last
// significant pieces, the index of its ASC/DESC word (-1 when absent) and
// whether it says NULLS FIRST/LAST itself.
type OrderTerm struct {
	First, Last int
	Dir         int
	Desc        bool
	Nulls       bool
}

// OrderTerms returns the terms of the ORDER BY clause whose BY is at by:
// they run to a comma at the clause's depth, and the clause ends at a
// ")" closing its level, at LIMIT, OFFSET, ROWS, RANGE, GROUPS, WINDOW or
// at the end of the statement. ok is false when a term is empty.
func OrderTerms(ps []Piece, by int) (terms []OrderTerm, ok bool) {
	start, depth := -1, 0
	flush := func(last int) bool {
		if start < 0 {
			return false
		}
		t := OrderTerm{First: start, Last: last, Dir: -1}
		for i := start; i <= last; i++ {
			if ps[i].Kind != TokWord {
				continue
			}
			switch {
			case ps[i].Name == "nulls" && i != start:
				t.Nulls = true
			case (ps[i].Name == "asc" || ps[i].Name == "desc") && i != start && t.Dir < 0:
				if DepthAt(ps, start, i) == 0 {
					t.Dir, t.Desc = i, ps[i].Name == "desc"
				}
			}
		}
		terms = append(terms, t)
		start = -1
		return true
	}
	last := -1
	for i := by + 1; i < len(ps); i++ {
		p := ps[i]
		if p.Kind == TokSpace {
			continue
		}
		if depth == 0 {
			switch {
			case p.Text == ")", p.Kind == TokWord && (p.Name == "limit" || p.Name == "offset" || p.Name == "rows" ||
				p.Name == "range" || p.Name == "groups" || p.Name == "window"):
				return terms, flush(last)
			case p.Text == ",":
				if !flush(last) {
					return terms, false
				}
				continue
			}
		}
		switch p.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if start < 0 {
			start = i
		}
		last = i
	}
	return terms, flush(last)
}

// DepthAt is the parenthesis depth of piece i relative to piece from.
func DepthAt(ps []Piece, from, i int) int {
	depth := 0
	for k := from; k < i; k++ {
		switch ps[k].Text {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
	return depth
}

package querylang

import "strings"

// QueryBody is one parenthesized query — "(" followed by SELECT, WITH or
// VALUES — in a statement's pieces: a derived table, a sub-query, a CTE's
// body or a parenthesized member of a compound SELECT. Drivers use it to
// keep their engine from merging a query into the one around it (AQ-6).
type QueryBody struct {
	Open, Close int // indices of its "(" and ")"
	// Sublink: the operand of EXISTS, IN, ANY, SOME or ALL (not ALL after
	// UNION, INTERSECT or EXCEPT).
	Sublink bool
	// CTE: the body of a common table expression (after AS [NOT]
	// [MATERIALIZED]); NotMaterialized is then the index of NOT in
	// AS NOT MATERIALIZED, else -1.
	CTE             bool
	NotMaterialized int
	// Recursive: a CTE body of a WITH RECURSIVE list that names its own
	// CTE (it reads itself).
	Recursive bool
	// Limited: LIMIT or OFFSET at the body's own level (not inside a
	// nested parenthesis).
	Limited bool
	// Computes: a result column of one of its SELECTs is more than a
	// column reference (`a`, `t.a`, `*`, `t.*`), a literal or a bind
	// value, optionally aliased; or it is VALUES; or it has a FULL JOIN at
	// its own level (a merged USING column is a COALESCE). A body that
	// does not compute only renames columns of the level below.
	Computes bool
}

// QueryBodies returns the parenthesized queries of ps in the order their
// ")" closes (inner before outer). One pass over ps; each word is compared
// with the names of the CTE bodies enclosing it, at most MaxQueryDepth of
// them for a text CheckQueryText admitted.
func QueryBodies(ps []Piece) []QueryBody {
	type frame struct {
		body      bool
		qb        QueryBody
		name      string // a CTE body's name, lower case
		recursive bool   // a WITH RECURSIVE was seen at this frame's level
		reads     bool   // the CTE's name occurs in its body
		selects   []int  // the SELECT words at this frame's level
	}
	stack := []frame{{}} // the statement's own level at the bottom
	var out []QueryBody
	prevSig := func(i int) int { // the last significant piece before i, or -1
		for k := i - 1; k >= 0; k-- {
			if ps[k].Kind != TokSpace {
				return k
			}
		}
		return -1
	}
	for i, p := range ps {
		switch {
		case p.Kind == TokOp && p.Text == "(":
			f := frame{}
			if j := FirstSignificant(ps, i+1); j >= 0 && ps[j].Kind == TokWord &&
				(ps[j].Name == "select" || ps[j].Name == "with" || ps[j].Name == "values") {
				f.body = true
				f.qb = QueryBody{Open: i, NotMaterialized: -1, Computes: ps[j].Name == "values"}
				k := prevSig(i)
				if k >= 0 && ps[k].Kind == TokWord {
					switch ps[k].Name {
					case "exists", "in", "any", "some":
						f.qb.Sublink = true
					case "all":
						b := prevSig(k)
						f.qb.Sublink = b < 0 || (ps[b].Name != "union" && ps[b].Name != "intersect" && ps[b].Name != "except")
					}
				}
				if k >= 0 && ps[k].Kind == TokWord && ps[k].Name == "materialized" {
					if n := prevSig(k); n >= 0 && ps[n].Kind == TokWord && ps[n].Name == "not" {
						f.qb.NotMaterialized = n
						k = n
					}
					k = prevSig(k)
				}
				if k >= 0 && ps[k].Kind == TokWord && ps[k].Name == "as" {
					f.qb.CTE = true
					n := prevSig(k)
					if n >= 0 && ps[n].Kind == TokOp && ps[n].Text == ")" {
						if o := MatchingBack(ps, n); o >= 0 {
							n = prevSig(o)
						} else {
							n = -1
						}
					}
					if n >= 0 {
						f.name = ps[n].Name
					}
					f.qb.Recursive = stack[len(stack)-1].recursive // refined below: it must read itself
				}
			}
			stack = append(stack, f)
		case p.Kind == TokOp && p.Text == ")":
			if len(stack) > 1 {
				f := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if f.body {
					f.qb.Close = i
					if f.name == "" || !f.reads {
						f.qb.Recursive = false
					}
					for _, sel := range f.selects {
						f.qb.Computes = f.qb.Computes || !bareResult(ps, sel, i)
					}
					out = append(out, f.qb)
				}
			}
		case p.Kind == TokWord:
			top := &stack[len(stack)-1]
			switch p.Name {
			case "limit", "offset":
				top.qb.Limited = true
			case "full":
				top.qb.Computes = true
			case "select":
				top.selects = append(top.selects, i)
			case "with":
				top.recursive = false
				if j := FirstSignificant(ps, i+1); j >= 0 && ps[j].Name == "recursive" {
					top.recursive = true
				}
			}
			fallthrough
		case p.Kind == TokQuotedID:
			if p.Name != "" {
				for k := len(stack) - 1; k > 0; k-- {
					if stack[k].name == p.Name {
						stack[k].reads = true
					}
				}
			}
		}
	}
	return out
}

// bareResult reports whether the result columns of the SELECT word at sel
// (ending at the first clause word at its level, or at end) are each a
// column reference, `*`, a literal or a bind value, optionally aliased.
// It reads only the pieces of the result list: each piece is read by at
// most one call. An operator's text may carry spaces (a driver's
// rewriting).
func bareResult(ps []Piece, sel, end int) bool {
	var item []Piece // the significant pieces of the current item
	bare := func() bool {
		n := len(item)
		if n >= 2 && item[n-2].Kind == TokWord && item[n-2].Name == "as" {
			n -= 2 // AS alias
		} else if n >= 2 && (item[n-1].Kind == TokWord || item[n-1].Kind == TokQuotedID) &&
			(item[n-2].Kind == TokWord || item[n-2].Kind == TokQuotedID) {
			n-- // alias without AS
		}
		switch {
		case n == 1:
			k := item[0].Kind
			return k == TokWord || k == TokQuotedID || k == TokString || k == TokNumber || k == TokBlob || k == TokParam ||
				(k == TokOp && strings.TrimSpace(item[0].Text) == "*")
		case n >= 3 && n%2 == 1: // a.b, a.b.c, a.*
			for k := 0; k < n; k++ {
				p := item[k]
				switch {
				case k%2 == 1 && !(p.Kind == TokOp && p.Text == "."):
					return false
				case k%2 == 0 && k == n-1 && p.Kind == TokOp && strings.TrimSpace(p.Text) == "*":
				case k%2 == 0 && p.Kind != TokWord && p.Kind != TokQuotedID:
					return false
				}
			}
			return true
		}
		return false
	}
	first := true
	for i := sel + 1; i < end; i++ {
		p := ps[i]
		if p.Kind == TokSpace {
			continue
		}
		if p.Kind == TokWord {
			switch p.Name {
			case "distinct", "all":
				if first {
					continue
				}
			case "from", "where", "group", "having", "window", "order", "limit", "offset", "union", "intersect", "except":
				return len(item) == 0 || bare()
			}
		}
		first = false
		switch {
		case p.Kind == TokOp && p.Text == ",":
			if !bare() {
				return false
			}
			item = item[:0]
		case p.Kind == TokOp && (p.Text == "(" || p.Text == ")"):
			return false // a call or an expression in parentheses
		default:
			item = append(item, p)
		}
	}
	return len(item) == 0 || bare()
}

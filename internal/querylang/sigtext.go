package querylang

import (
	"strconv"
	"strings"
)

// sigText is a query's significant tokens (whitespace and comments
// dropped) with the structure the static cost rules read: matching
// parentheses, each parenthesis's top-level commas, and, when the rule
// runs with the bind values (args non-nil), the value each parameter
// binds.
type sigText struct {
	sql    string
	sig    []Token
	match  []int         // match[i]: the ")" of the "(" at i
	back   []int         // back[i]: the "(" of the ")" at i
	commas map[int][]int // the top-level commas of the "(" at i
	param  []int         // param[i]: the parameter number of sig[i], 0 if none
	args   []any
}

func newSigText(sql string, toks []Token, args []any) *sigText {
	v := &sigText{sql: sql, args: args, commas: map[int][]int{}}
	last := 0
	for _, tk := range toks {
		if tk.Kind == TokSpace {
			continue
		}
		n := 0
		if tk.Kind == TokParam {
			n, last = ParamNumber(sql[tk.Start:tk.End], last)
		}
		v.sig, v.param = append(v.sig, tk), append(v.param, n)
	}
	v.match, v.back = make([]int, len(v.sig)), make([]int, len(v.sig))
	var stack []int
	for i := range v.sig {
		switch {
		case v.isOp(i, "("):
			stack = append(stack, i)
		case v.isOp(i, ")"):
			if n := len(stack); n > 0 {
				v.match[stack[n-1]], v.back[i] = i, stack[n-1]
				stack = stack[:n-1]
			}
		case v.isOp(i, ","):
			if n := len(stack); n > 0 {
				v.commas[stack[n-1]] = append(v.commas[stack[n-1]], i)
			}
		}
	}
	return v
}

func (v *sigText) text(i int) string { return v.sql[v.sig[i].Start:v.sig[i].End] }

// lower is token i's text lower-cased (a quoted identifier's name); ""
// out of range.
func (v *sigText) lower(i int) string {
	if i < 0 || i >= len(v.sig) {
		return ""
	}
	if v.sig[i].Kind == TokQuotedID {
		return strings.ToLower(UnquoteIdent(v.text(i)))
	}
	return strings.ToLower(v.text(i))
}

func (v *sigText) isOp(i int, op string) bool {
	return i >= 0 && i < len(v.sig) && v.sig[i].Kind == TokOp && v.text(i) == op
}

func (v *sigText) isName(i int) bool {
	return i >= 0 && i < len(v.sig) && (v.sig[i].Kind == TokWord || v.sig[i].Kind == TokQuotedID)
}

// bound is the value parameter token i binds, and whether it has one.
func (v *sigText) bound(i int) (any, bool) {
	if v.args == nil || v.sig[i].Kind != TokParam {
		return nil, false
	}
	if n := v.param[i]; n >= 1 && n <= len(v.args) {
		return v.args[n-1], true
	}
	return nil, false
}

// arg returns the one token index of argument k of the call opening at
// open, or -1 when that argument is not a single token.
func (v *sigText) arg(open, k int) int {
	cs := v.commas[open]
	from, to := open+1, v.match[open]
	if k > 0 {
		if k > len(cs) {
			return -1
		}
		from = cs[k-1] + 1
	}
	if k < len(cs) {
		to = cs[k]
	}
	if to-from != 1 {
		return -1
	}
	return from
}

// strArg is argument k of the call at open when it is a string literal,
// or a number or a parameter: the text of the value it binds; for a
// number that is not a bound int64, "0" (its text has one character at
// least); "" for NULL.
func (v *sigText) strArg(open, k int) (string, bool) {
	j := v.arg(open, k)
	if j < 0 {
		return "", false
	}
	if a, ok := v.bound(j); ok {
		switch x := a.(type) {
		case string:
			return x, true
		case []byte:
			return string(x), true
		case int64:
			return strconv.FormatInt(x, 10), true
		case float64, bool: // a text of one character at least
			return "0", true
		case nil: // the call returns NULL
			return "", true
		}
		return "", false
	}
	switch v.sig[j].Kind {
	case TokString:
		return UnquoteIdent(v.text(j)), true
	case TokNumber: // a text of one character at least
		return "0", true
	}
	return "", false
}

// numArg is argument k of the call at open when it is an integer
// literal, or a parameter binding an int64.
func (v *sigText) numArg(open, k int) (int64, bool) {
	j := v.arg(open, k)
	if j < 0 {
		return 0, false
	}
	if a, ok := v.bound(j); ok {
		n, ok := a.(int64)
		return n, ok
	}
	if v.sig[j].Kind != TokNumber {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v.text(j), "_", ""), 0, 64)
	return n, err == nil
}

// endsValue: token j ends an operand, so a word after it is a keyword
// (x DESC, … END, ) OVER), never a column reference.
func (v *sigText) endsValue(j int) bool {
	if j < 0 {
		return false
	}
	switch v.sig[j].Kind {
	case TokNumber, TokString, TokQuotedID:
		return true
	case TokWord:
		switch w := v.lower(j); w {
		case "null", "current_date", "current_time", "current_timestamp":
			return true
		default:
			return !growthKeywords[w]
		}
	}
	return v.isOp(j, ")")
}

// callWeight is the weight of a call of name whose "(" is at open (see
// CheckGrowth: how many times it can multiply an argument), and whether
// it returns a number whatever its arguments.
func (v *sigText) callWeight(name string, open int) (int64, bool) {
	switch {
	case numericCalls[name]:
		return 1, true
	case rowAggregates[name]:
		return MaxQueryGrowth, false
	}
	switch name {
	case "replace":
		p, ok1 := v.strArg(open, 1)
		r, ok2 := v.strArg(open, 2)
		if !ok1 || !ok2 {
			return MaxQueryGrowth, false
		}
		if len(p) == 0 {
			return 1, false
		}
		return max(1, int64((len(r)+len(p)-1)/len(p))), false
	case "repeat":
		if n, ok := v.numArg(open, 1); ok {
			return max(1, min(n, MaxQueryGrowth+1)), false
		}
		return MaxQueryGrowth, false
	case "lpad", "rpad":
		if _, ok := v.numArg(open, 1); ok {
			return 1, false
		}
		return MaxQueryGrowth, false
	case "zeroblob", "randomblob", "space":
		if _, ok := v.numArg(open, 0); ok {
			return 1, false
		}
		return MaxQueryGrowth, false
	case "printf", "format":
		if f, ok := v.strArg(open, 0); ok && !strings.Contains(f, "*") {
			return formatWeight(f), false
		}
		return MaxQueryGrowth, false
	case "regexp_replace":
		// A pattern may match the empty string at every position:
		// n characters → n + (n+1)·len(r).
		r, ok := v.strArg(open, 2)
		if !ok || strings.ContainsAny(r, "\\&$") {
			return MaxQueryGrowth, false
		}
		return int64(len(r)) + 1, false
	case "hex", "quote", "to_hex", "quote_literal", "quote_ident", "quote_nullable":
		return 2, false
	}
	if jsonEscapes[name] {
		return 6, false
	}
	return 1, false
}

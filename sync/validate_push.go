package sync

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// MaxApplicationCodeBytes bounds application failure/rejection codes (V-8).
const MaxApplicationCodeBytes = 128

// ReservedCodePrefixes are the code namespaces kept for syncstore and the
// sync protocol (V-8); an application code must not start with one.
var ReservedCodePrefixes = []string{"sync.", "blob.", "operation.", "presence.", "client.", "reaction."}

// ValidateApplicationCode checks an application failure or rejection code
// (V-8): an ASCII letter, then ASCII letters, digits or '.', '_', ':',
// '-', at most 128 bytes in all, and not starting with a reserved prefix
// (ReservedCodePrefixes, compared ignoring ASCII case). Failure →
// *Error with CodeInvalidArgument; the message never repeats the
// code.
func ValidateApplicationCode(code string) error {
	const op = "ValidateApplicationCode"
	if why := codeSyntax(code); why != "" {
		return argErr(op, "V-8", "the code %s", why)
	}
	lower := strings.ToLower(code)
	for _, p := range ReservedCodePrefixes {
		if strings.HasPrefix(lower, p) {
			return argErr(op, "V-8", "codes starting %q are reserved", p)
		}
	}
	return nil
}

// codeSyntax says why code breaks V-8's syntax ("" when it does not).
func codeSyntax(code string) string {
	switch {
	case code == "":
		return "is empty"
	case len(code) > MaxApplicationCodeBytes:
		return fmt.Sprintf("is %d bytes, over the %d-byte limit", len(code), MaxApplicationCodeBytes)
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if i == 0 && !letter {
			return "must start with an ASCII letter"
		}
		if !letter && (c < '0' || c > '9') && c != '.' && c != '_' && c != ':' && c != '-' {
			return "may hold only ASCII letters, digits and . _ : -"
		}
	}
	return ""
}

// checkPushResult enforces V-8 on a push result before it is stored
// (PR-1): status applied|rejected; CommitSeq > 0 iff applied; each op's
// status known; an op code, when set, follows V-8's syntax (reserved
// prefixes are allowed here: the push layer writes sync.* codes); text
// fields valid UTF-8; Details "" or a JSON document; ServerRow values of
// the Go types of ColumnType (CodeInvalidValue, naming the column).
func checkPushResult(op string, r PushResult) error {
	switch r.Status {
	case PushApplied:
		if r.CommitSeq <= 0 {
			return argErr(op, "V-8, PR-1", "an applied push result needs a commitSeq > 0")
		}
	case PushRejected:
		if r.CommitSeq != 0 {
			return argErr(op, "V-8, PR-1", "a rejected push result has commitSeq 0")
		}
	default:
		return argErr(op, "V-8, PR-1", "push result status must be %q or %q", PushApplied, PushRejected)
	}
	if !utf8.ValidString(r.CacheIdentity) {
		return argErr(op, "PR-1", "cache identity is not valid UTF-8")
	}
	for i, o := range r.Ops {
		if err := checkOpResult(fmt.Sprintf("%s: op %d", op, i), o); err != nil {
			return err
		}
	}
	return nil
}

func checkOpResult(op string, o OpResult) error {
	switch o.Status {
	case OpApplied, OpConflict, OpError:
	default:
		return argErr(op, "V-8, PR-1", "op status must be %q, %q or %q", OpApplied, OpConflict, OpError)
	}
	if o.Code != "" {
		if why := codeSyntax(o.Code); why != "" {
			return argErr(op, "V-8", "the op code %s", why)
		}
	}
	if !utf8.ValidString(o.Message) {
		return argErr(op, "PR-1", "the op message is not valid UTF-8")
	}
	if o.Details != "" && (!utf8.ValidString(string(o.Details)) || !json.Valid([]byte(o.Details))) {
		return argErr(op, "V-8, PR-1", "op details must be empty or a valid JSON document")
	}
	for _, k := range sortedKeys(o.ServerRow) {
		if why := badText(k); why != "" {
			return argErr(op, "PR-1", "a server row column name %s", why)
		}
		x := o.ServerRow[k]
		if x == nil {
			continue
		}
		typ, ok := typeOfValue(x)
		if !ok {
			return valueErr(op, k, "V-3, PR-1", "server row column %s holds a %T, not a value type", quoteIfPrintable(k), x)
		}
		if why := valueProblem(Column{Name: k, Type: typ, Nullable: true}, x); why != "" {
			return valueErr(op, k, "V-3, PR-1", "server row column %s: %s", quoteIfPrintable(k), why)
		}
	}
	return nil
}

// checkClientRecord enforces V-2, V-6 and V-7 on a client record: client
// and actor ids; each subscription's id, known table (SCH-8) and scope
// filter text.
func (cs *compiledSchema) checkClientRecord(op string, rec ClientRecord) error {
	if err := checkClientID(op, rec.ClientID); err != nil {
		return err
	}
	if err := idActor.check(op, rec.ActorID); err != nil {
		return err
	}
	for i, sub := range rec.Subscriptions {
		sop := fmt.Sprintf("%s: subscription %d", op, i)
		if err := idSubscription.check(sop, sub.ID); err != nil {
			return err
		}
		if _, err := cs.table(sop, sub.Table); err != nil {
			return err
		}
		if _, err := checkFilterEntries(sop, sub.Scopes); err != nil {
			return err
		}
	}
	return nil
}

// checkIndexQuery enforces IXL-2 in its order: unknown table
// (CodeUnknownTable); limit outside 1…1,000 (CodeInvalidLimit); undeclared
// index (CodeIndexNotFound); wrong value count
// (CodeIndexValueCountMismatch); a value of the wrong type
// (CodeInvalidValue; nil, matching NULL, fits any column). Then AfterRowID
// ("" or V-2).
func (cs *compiledSchema) checkIndexQuery(op string, q IndexQuery) error {
	t, err := cs.table(op, q.Table)
	if err != nil {
		return err
	}
	if err := checkLimit(op, "index lookup limit", q.Limit, MaxIndexLookupLimit); err != nil {
		return err
	}
	ix, ok := t.indexes[q.Index]
	if !ok {
		return driver.Errorf(CodeIndexNotFound, "%s: index %s is not declared on table %q (IXL-2)", op, quoteIfPrintable(q.Index), t.Name)
	}
	if len(q.Values) != len(ix.Columns) {
		return driver.Errorf(CodeIndexValueCountMismatch, "%s: index %q has %d columns, got %d values (IXL-2)", op, ix.Name, len(ix.Columns), len(q.Values))
	}
	for i, name := range ix.Columns {
		c := t.cols[name]
		c.Nullable = true
		if err := checkValue(op, c, q.Values[i]); err != nil {
			return err
		}
	}
	return idAfterRow.checkOptional(op, q.AfterRowID)
}

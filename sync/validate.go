package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// This file holds the checks of docs/contract.md group V, in one place. Every
// check runs before a driver is called (V-9 holds by construction) and
// builds its message from names and rule IDs only, never from the value at
// fault (V-10).

// Bounds of V-1, V-2 and V-5.
const (
	// MaxIDBytes bounds partitions (V-1) and ids (V-2): row ids, client
	// ids, client commit ids, actor ids, epochs, subscription ids and
	// reaction types.
	MaxIDBytes = 255
	// MaxReactionKeyBytes bounds reaction keys (V-2).
	MaxReactionKeyBytes = 256
	// MaxLimit bounds every limit except index lookups' (V-5).
	MaxLimit = 10000
	// MaxIndexLookupLimit bounds IndexQuery.Limit (V-5, IXL-2).
	MaxIndexLookupLimit = 1000
	// RemoteCommandPrefix starts the client ids reserved for server
	// commands (V-7).
	RemoteCommandPrefix = `["remote-command",`
)

// idKind describes one kind of identifier-like string argument: what a
// message calls it, its byte bound and the rule it cites.
type idKind struct {
	name string
	max  int
	rule string
}

var (
	idPartition      = idKind{"partition", MaxIDBytes, "V-1"}
	idAfterPartition = idKind{"afterPartition", MaxIDBytes, "V-1"}
	idRow            = idKind{"row id", MaxIDBytes, "V-2"}
	idAfterRow       = idKind{"afterRowID", MaxIDBytes, "V-2"}
	idClient         = idKind{"client id", MaxIDBytes, "V-2"}
	idAfterClient    = idKind{"afterClientID", MaxIDBytes, "V-2"}
	idClientCommit   = idKind{"client commit id", MaxIDBytes, "V-2"}
	idActor          = idKind{"actor id", MaxIDBytes, "V-2"}
	idEpoch          = idKind{"epoch", MaxIDBytes, "REG-1, V-2"}
	idSubscription   = idKind{"subscription id", MaxIDBytes, "V-2"}
	idFilterKey      = idKind{"scope filter key", MaxIDBytes, "V-6"}
	idReactionKey    = idKind{"reaction key", MaxReactionKeyBytes, "V-2"}
	idReactionType   = idKind{"reaction type", MaxIDBytes, "V-2"}
)

// check requires s to be non-empty, valid UTF-8 without NUL, at most k.max
// bytes → CodeInvalidArgument.
func (k idKind) check(op, s string) error {
	if s == "" {
		return argErr(op, k.rule, "%s is empty", k.name)
	}
	return k.checkOptional(op, s)
}

// checkOptional is check with "" allowed.
func (k idKind) checkOptional(op, s string) error {
	if len(s) > k.max {
		return argErr(op, k.rule, "%s is %d bytes, over the %d-byte limit", k.name, len(s), k.max)
	}
	if why := badText(s); why != "" {
		return argErr(op, k.rule, "%s %s", k.name, why)
	}
	return nil
}

// badText says why s is not storable text ("" when it is): valid UTF-8
// without NUL.
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "contains NUL"
	}
	return ""
}

// checkClientID is V-2 plus V-7's reserved prefix (CodeInvalidClientID).
func checkClientID(op, id string) error {
	if err := idClient.check(op, id); err != nil {
		return err
	}
	return checkRemoteCommand(op, id)
}

// checkOptionalClientID is checkClientID with "" allowed (a commit made by
// the server itself).
func checkOptionalClientID(op, id string) error {
	if err := idClient.checkOptional(op, id); err != nil {
		return err
	}
	return checkRemoteCommand(op, id)
}

// checkAfterClientID checks a paging position over client ids: "" (from
// the first) or a client id V-2 and V-7 allow.
func checkAfterClientID(op, id string) error {
	if err := idAfterClient.checkOptional(op, id); err != nil {
		return err
	}
	return checkRemoteCommand(op, id)
}

// checkCommandClientID is V-2 for a server command's client id, which
// must start with RemoteCommandPrefix (PUSH-13; CodeInvalidClientID).
func checkCommandClientID(op, id string) error {
	if err := idClient.check(op, id); err != nil {
		return err
	}
	if !strings.HasPrefix(id, RemoteCommandPrefix) {
		return driver.Errorf(CodeInvalidClientID, "%s: a server command's client id starts with the server-command prefix %s (PUSH-13; CommandClientID makes one)", op, RemoteCommandPrefix)
	}
	return nil
}

func checkRemoteCommand(op, id string) error {
	if strings.HasPrefix(id, RemoteCommandPrefix) {
		e := driver.Errorf(CodeInvalidClientID, "%s: client id starts with the reserved server-command prefix %s (V-7)", op, RemoteCommandPrefix)
		return e
	}
	return nil
}

// checkLimit requires 1 ≤ n ≤ max → CodeInvalidLimit (V-5).
func checkLimit(op, what string, n, max int) error {
	if n < 1 || n > max {
		return driver.Errorf(CodeInvalidLimit, "%s: %s %d is outside 1…%d (V-5)", op, what, n, max)
	}
	return nil
}

// checkSeq requires seq ≥ 0 → CodeInvalidArgument.
func checkSeq(op, what string, seq int64, rule string) error {
	if seq < 0 {
		return argErr(op, rule, "%s %d is negative", what, seq)
	}
	return nil
}

// checkFilter enforces V-6 on a read filter: no keys →
// CodeScanRequiresScope; keys and values must be valid text
// (CodeInvalidArgument). empty reports a key with an empty value list: the
// filter matches nothing.
func checkFilter(op string, f ScopeFilter) (empty bool, err error) {
	if len(f) == 0 {
		return false, driver.Errorf(CodeScanRequiresScope, "%s: the scope filter has no keys; reads are always scoped (V-6)", op)
	}
	return checkFilterEntries(op, f)
}

// checkFilterEntries checks a filter's keys and values, in key order.
func checkFilterEntries(op string, f ScopeFilter) (empty bool, err error) {
	for _, k := range sortedKeys(f) {
		if err := idFilterKey.check(op, k); err != nil {
			return false, err
		}
		vals := f[k]
		if len(vals) == 0 {
			empty = true
		}
		for _, v := range vals {
			if why := badText(v); why != "" {
				return false, argErr(op, "V-6", "a value of scope filter key %s %s", quoteIfPrintable(k), why)
			}
		}
	}
	return empty, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkValues enforces V-3 on a full row's values: every column present,
// no unknown column, each value of its column's type.
func (t *compiledTable) checkValues(op string, v Values) error {
	for _, c := range t.Columns {
		x, ok := v[c.Name]
		if !ok {
			return valueErr(op, c.Name, "V-3", "column %q is missing (every column must be present; NULL is an untyped nil)", c.Name)
		}
		if err := checkValue(op, c, x); err != nil {
			return err
		}
		if t.keyed[c.Name] {
			if err := checkKeyValue(op, c.Name, x); err != nil {
				return err
			}
		}
	}
	if len(v) > len(t.Columns) {
		for _, k := range sortedKeys(v) {
			if _, ok := t.cols[k]; !ok {
				e := driver.Errorf(CodeInvalidValue, "%s: unknown column %s in table %q (V-3)", op, quoteIfPrintable(k), t.Name)
				e.Column = k
				return e
			}
		}
	}
	return nil
}

// checkValue enforces V-3 on one value of column c: the Go type of c.Type
// exactly (never coerced), NULL (untyped nil) only when c is nullable.
func checkValue(op string, c Column, x any) error {
	if why := valueProblem(c, x); why != "" {
		return valueErr(op, c.Name, "V-3", "column %q: %s", c.Name, why)
	}
	return nil
}

// valueProblem says why x does not fit c ("" when it fits).
func valueProblem(c Column, x any) string {
	if x == nil {
		if !c.Nullable {
			return "NULL in a non-nullable column"
		}
		return ""
	}
	switch c.Type {
	case TypeString:
		s, ok := x.(string)
		if !ok {
			return wrongType("string", x)
		}
		if why := badText(s); why != "" {
			return "the string " + why
		}
	case TypeInteger:
		if _, ok := x.(int64); !ok {
			return wrongType("int64", x)
		}
	case TypeFloat:
		f, ok := x.(float64)
		if !ok {
			return wrongType("float64", x)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "the float is not finite (NaN and ±Inf are rejected)"
		}
	case TypeBoolean:
		if _, ok := x.(bool); !ok {
			return wrongType("bool", x)
		}
	case TypeJSON:
		j, ok := x.(JSON)
		if !ok {
			return wrongType("JSON", x)
		}
		if !utf8.ValidString(string(j)) {
			return "the JSON text is not valid UTF-8"
		}
		if !json.Valid([]byte(j)) {
			return "the JSON text is not a valid JSON document"
		}
	case TypeBytes:
		b, ok := x.([]byte)
		if !ok {
			return wrongType("[]byte", x)
		}
		if b == nil {
			return "[]byte(nil) is ambiguous: use nil for NULL or []byte{} for empty"
		}
	default:
		return "the column has an unknown type"
	}
	return ""
}

func wrongType(want string, x any) string {
	return fmt.Sprintf("the column takes a Go %s, got a %T (never coerced)", want, x)
}

// typeOfValue returns the column type whose Go type x has, for values
// validated without a schema (push results' server rows).
func typeOfValue(x any) (ColumnType, bool) {
	switch x.(type) {
	case string:
		return TypeString, true
	case int64:
		return TypeInteger, true
	case float64:
		return TypeFloat, true
	case bool:
		return TypeBoolean, true
	case JSON:
		return TypeJSON, true
	case []byte:
		return TypeBytes, true
	}
	return "", false
}

// checkRow enforces V-2, V-3 and V-4 on a row written to t.
func (t *compiledTable) checkRow(op string, r Row) error {
	if err := idRow.check(op, r.ID); err != nil {
		return err
	}
	if err := t.checkValues(op, r.Values); err != nil {
		return err
	}
	if r.Values[t.PrimaryKey] != r.ID {
		return valueErr(op, t.PrimaryKey, "V-4", "the row id does not equal the primary-key column %q", t.PrimaryKey)
	}
	return t.checkScopes(op, r.Scopes, r.Values)
}

// checkScopes enforces V-4: scopes hold exactly the table's variables,
// each equal to its scope column's value in values.
func (t *compiledTable) checkScopes(op string, scopes Scopes, values Values) error {
	for _, sc := range t.Scopes {
		got, ok := scopes[sc.Variable]
		if !ok {
			return valueErr(op, sc.Column, "V-4", "scope variable %q is missing from the scopes", sc.Variable)
		}
		if values[sc.Column] != got {
			return valueErr(op, sc.Column, "V-4", "scope variable %q does not equal column %q", sc.Variable, sc.Column)
		}
	}
	return t.checkNoExtraScopes(op, scopes)
}

func (t *compiledTable) checkNoExtraScopes(op string, scopes Scopes) error {
	if len(scopes) <= len(t.Scopes) {
		return nil
	}
	for _, k := range sortedKeys(scopes) {
		if _, ok := t.scopeOf[k]; !ok {
			return valueErr(op, "", "V-4", "scope variable %s is not a scope of table %q", quoteIfPrintable(k), t.Name)
		}
	}
	return nil
}

// checkChange enforces V-2…V-4 on change i of a commit on table t.
func (t *compiledTable) checkChange(op string, i int, c Change) error {
	op = fmt.Sprintf("%s: change %d", op, i)
	if err := idRow.check(op, c.RowID); err != nil {
		return err
	}
	switch c.Op {
	case OpUpsert:
		return t.checkRow(op, Row{ID: c.RowID, Scopes: c.Scopes, Values: c.Values})
	case OpDelete:
		if len(c.Values) != 0 {
			return argErr(op, "V-4", "a delete carries no values")
		}
		if c.RowVersion != 0 {
			return argErr(op, "V-4", "a delete carries row version 0")
		}
		for _, sc := range t.Scopes {
			v, ok := c.Scopes[sc.Variable]
			if !ok {
				return valueErr(op, sc.Column, "V-4", "scope variable %q is missing from the scopes", sc.Variable)
			}
			if why := badText(v); why != "" {
				return valueErr(op, sc.Column, "V-4", "scope variable %q %s", sc.Variable, why)
			}
			if err := checkKeyValue(op, sc.Column, v); err != nil {
				return err
			}
		}
		return t.checkNoExtraScopes(op, c.Scopes)
	}
	return argErr(op, "V-4", "op must be %q or %q", OpUpsert, OpDelete)
}

// checkCommit enforces V-2, V-4 and V-7 on a commit input; ids may be ""
// (a commit made by the server), changes name known tables (SCH-8).
func (cs *compiledSchema) checkCommit(op string, c CommitInput) error {
	if err := checkOptionalClientID(op, c.ClientID); err != nil {
		return err
	}
	if err := idClientCommit.checkOptional(op, c.ClientCommitID); err != nil {
		return err
	}
	if err := idActor.checkOptional(op, c.ActorID); err != nil {
		return err
	}
	for i, ch := range c.Changes {
		t, err := cs.table(fmt.Sprintf("%s: change %d", op, i), ch.Table)
		if err != nil {
			return err
		}
		if err := t.checkChange(op, i, ch); err != nil {
			return err
		}
	}
	return nil
}

// table returns the ensured table called name → CodeUnknownTable (SCH-8)
// when there is no such table or no schema was ensured on the Store.
func (cs *compiledSchema) table(op, name string) (*compiledTable, error) {
	if cs == nil {
		return nil, driver.Errorf(CodeUnknownTable, "%s: no schema is ensured on this Store; call EnsureSchema first (SCH-8)", op)
	}
	t, ok := cs.tables[name]
	if !ok {
		return nil, driver.Errorf(CodeUnknownTable, "%s: table %s is not in the ensured schema (SCH-8)", op, quoteIfPrintable(name))
	}
	return t, nil
}

func argErr(op, rule, format string, args ...any) error {
	e := driver.Errorf(CodeInvalidArgument, format, args...)
	e.Message = op + ": " + e.Message
	e.Rule = joinRules(e.Rule, rule)
	return e
}

// joinRules lists the rule IDs a and b name ("" when neither).
func joinRules(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ", " + b
}

func valueErr(op, column, rule, format string, args ...any) error {
	e := driver.Errorf(CodeInvalidValue, format, args...)
	e.Message = op + ": " + e.Message
	e.Rule = joinRules(e.Rule, rule)
	e.Column = column
	return e
}

// firstErr returns the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkCtx rejects a nil context before it reaches a driver: database/sql
// panics on one while holding its pool lock, which would wedge the store
// for every later caller.
func checkCtx(ctx context.Context, op string) error {
	if ctx == nil {
		return argErr(op, "TX-7", "ctx is nil; use context.Background() or a derived context")
	}
	return nil
}

// MaxKeyValueBytes bounds the values of columns that are index keys: scope
// columns and the columns of declared indexes (strings, bytes and JSON
// text). Every engine indexes them, and an index key has a size limit
// (InnoDB 3,072 bytes, a PostgreSQL B-tree entry about 2.7 KB); one huge
// key also slows every neighbouring partition's index reads. A portable
// bound, the same as for ids (V-2), makes every driver accept and refuse
// the same rows.
const MaxKeyValueBytes = MaxIDBytes

// checkKeyValue enforces MaxKeyValueBytes on a value of an index-key column
// → CodeInvalidValue naming the column, never the value (V-3, V-10).
func checkKeyValue(op, column string, x any) error {
	n := 0
	switch v := x.(type) {
	case string:
		n = len(v)
	case []byte:
		n = len(v)
	case JSON:
		n = len(v)
	}
	if n > MaxKeyValueBytes {
		return valueErr(op, column, "V-3", "column %q is a scope or index key: its value is at most %d bytes, got %d", column, MaxKeyValueBytes, n)
	}
	return nil
}

package sync

import (
	"fmt"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// MaxIdentifierBytes bounds every schema identifier (SCH-2): the shortest
// limit among the supported engines (PostgreSQL's 63).
const MaxIdentifierBytes = 63

// reservedIdentifierPrefixes are kept for syncstore's own objects (SCH-2);
// compared case-insensitively.
var reservedIdentifierPrefixes = []string{"sync_", "_sync"}

// engineReservedPrefixes are table and index name prefixes that one of the
// supported engines refuses, or resolves to an object of its own, so a
// schema using one would work on some drivers and not on others (SCH-2
// promises a schema valid on one driver is valid on all). Compared
// case-insensitively; each carries why, for the error message.
var engineReservedPrefixes = []struct{ prefix, why string }{
	{"sqlite_", "SQLite refuses object names starting with sqlite_ (reserved for internal use)"},
	{"_cf_", "Cloudflare D1 refuses names starting with _cf_ (its own tables)"},
	{"pg_", "PostgreSQL resolves names starting with pg_ to its system catalog first"},
	{"pragma_", "SQLite names its pragma table-valued functions pragma_…, which a table of that name shadows"},
}

// engineReservedTableNames are the names of SQLite's table-valued
// functions the bundled drivers' SQL calls: a table of that name shadows
// the function, and every statement that calls it fails ("'json_each' is
// not a function"). Lower case; compared case-insensitively.
var engineReservedTableNames = map[string]string{
	"json_each": "SQLite's table-valued function json_each, which the drivers' SQL calls, would be shadowed by a table of that name",
	"json_tree": "SQLite's table-valued function json_tree, which authoritative queries may call, would be shadowed by a table of that name",
}

// engineReservedIndexNames are index names an engine refuses. Lower case;
// compared case-insensitively.
var engineReservedIndexNames = map[string]string{
	"primary": "MySQL refuses an index named PRIMARY (the name of every table's primary key)",
}

// CompileSchema checks s against SCH-1 and SCH-2 and returns a deep copy
// of it, so later changes to s's slices never reach a Store. Rules:
//
//   - Version ≥ 1.
//   - Identifiers (tables, columns, indexes, scope variables): an ASCII
//     letter or '_' first, then ASCII letters, digits or '_', at most 63
//     bytes, not starting with "sync_" or "_sync" in any case.
//   - Table and index names are not engine-reserved, in any case: not
//     starting with "sqlite_", "_cf_", "pg_" or "pragma_"; no table named
//     "json_each" or "json_tree"; no index named "primary".
//   - Table names are unique in the schema; column, index and scope
//     variable names are unique in their table. Uniqueness ignores ASCII
//     case, since several engines fold identifiers.
//   - Every table has ≥ 1 column of a known type, a primary key naming a
//     non-nullable string column, and ≥ 1 scope whose column is a
//     non-nullable string column (V-4). A variable is bound to one column.
//   - Every index has a name and ≥ 1 column, each a column of its table,
//     none twice.
//
// Any failure → *Error with CodeSchemaInvalid naming the table and
// the identifier at fault.
func CompileSchema(s Schema) (Schema, error) {
	if s.Version < 1 {
		return Schema{}, schemaErr("schema version must be ≥ 1")
	}
	tables := map[string]bool{}
	for ti, t := range s.Tables {
		if err := checkIdentifier(fmt.Sprintf("table #%d name", ti), t.Name); err != nil {
			return Schema{}, err
		}
		if err := checkEngineReserved(fmt.Sprintf("table #%d name", ti), t.Name, engineReservedTableNames); err != nil {
			return Schema{}, err
		}
		key := strings.ToLower(t.Name)
		if tables[key] {
			return Schema{}, schemaErr("table %q is declared twice", t.Name)
		}
		tables[key] = true
		if err := compileTable(t); err != nil {
			return Schema{}, err
		}
	}
	return copySchema(s), nil
}

func compileTable(t Table) error {
	if len(t.Columns) == 0 {
		return schemaErr("table %q has no columns", t.Name)
	}
	cols := map[string]Column{}
	folded := map[string]bool{}
	for _, c := range t.Columns {
		if err := checkIdentifier(fmt.Sprintf("table %q: column name", t.Name), c.Name); err != nil {
			return err
		}
		if folded[strings.ToLower(c.Name)] {
			return schemaErr("table %q: column %q is declared twice", t.Name, c.Name)
		}
		folded[strings.ToLower(c.Name)] = true
		switch c.Type {
		case TypeString, TypeInteger, TypeFloat, TypeBoolean, TypeJSON, TypeBytes:
		default:
			return schemaErr("table %q: column %q has an unknown type", t.Name, c.Name)
		}
		cols[c.Name] = c
	}
	if t.PrimaryKey == "" {
		return schemaErr("table %q declares no primary key", t.Name)
	}
	if err := keyColumn(t, cols, t.PrimaryKey, "primary-key"); err != nil {
		return err
	}
	if len(t.Scopes) == 0 {
		return schemaErr("table %q declares no scope", t.Name)
	}
	vars := map[string]bool{}
	for _, sc := range t.Scopes {
		if err := checkIdentifier(fmt.Sprintf("table %q: scope variable", t.Name), sc.Variable); err != nil {
			return err
		}
		if vars[strings.ToLower(sc.Variable)] {
			return schemaErr("table %q: scope variable %q is bound to more than one column", t.Name, sc.Variable)
		}
		vars[strings.ToLower(sc.Variable)] = true
		if err := keyColumn(t, cols, sc.Column, "scope"); err != nil {
			return err
		}
	}
	indexes := map[string]bool{}
	for _, ix := range t.Indexes {
		if err := checkIdentifier(fmt.Sprintf("table %q: index name", t.Name), ix.Name); err != nil {
			return err
		}
		if err := checkEngineReserved(fmt.Sprintf("table %q: index name", t.Name), ix.Name, engineReservedIndexNames); err != nil {
			return err
		}
		if indexes[strings.ToLower(ix.Name)] {
			return schemaErr("table %q: index %q is declared twice", t.Name, ix.Name)
		}
		indexes[strings.ToLower(ix.Name)] = true
		if len(ix.Columns) == 0 {
			return schemaErr("table %q: index %q has no columns", t.Name, ix.Name)
		}
		seen := map[string]bool{}
		for _, c := range ix.Columns {
			if _, ok := cols[c]; !ok {
				return schemaErr("table %q: index %q names unknown column %s", t.Name, ix.Name, quoteIfPrintable(c))
			}
			if seen[c] {
				return schemaErr("table %q: index %q lists column %q twice", t.Name, ix.Name, c)
			}
			seen[c] = true
		}
	}
	return nil
}

// keyColumn checks that name is a non-nullable string column of t: the
// primary key and scope columns must be (V-4).
func keyColumn(t Table, cols map[string]Column, name, what string) error {
	c, ok := cols[name]
	if !ok {
		return schemaErr("table %q: %s column %s is not a column of the table", t.Name, what, quoteIfPrintable(name))
	}
	if c.Type != TypeString || c.Nullable {
		return schemaErr("table %q: %s column %q must be a non-nullable string column", t.Name, what, name)
	}
	return nil
}

// checkIdentifier enforces SCH-2's identifier syntax. what describes where
// the identifier is; an identifier that fails is not quoted unless it is
// printable ASCII, so a message never carries arbitrary bytes.
func checkIdentifier(what, id string) error {
	switch {
	case id == "":
		return schemaErr("%s is empty", what)
	case len(id) > MaxIdentifierBytes:
		return schemaErr("%s is %d bytes, over the %d-byte limit", what, len(id), MaxIdentifierBytes)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return schemaErr("%s %s must start with an ASCII letter or '_' and hold only ASCII letters, digits and '_'", what, quoteIfPrintable(id))
		}
	}
	lower := strings.ToLower(id)
	for _, p := range reservedIdentifierPrefixes {
		if strings.HasPrefix(lower, p) {
			return schemaErr("%s %q uses the reserved prefix %q", what, id, p)
		}
	}
	return nil
}

// checkEngineReserved refuses a table or index name (id, which has passed
// checkIdentifier) that an engine reserves: one of names (lower case) or
// a name starting with one of engineReservedPrefixes, in any case.
func checkEngineReserved(what, id string, names map[string]string) error {
	lower := strings.ToLower(id)
	if why, ok := names[lower]; ok {
		return schemaErr("%s %q is engine-reserved: %s", what, id, why)
	}
	for _, p := range engineReservedPrefixes {
		if strings.HasPrefix(lower, p.prefix) {
			return schemaErr("%s %q uses the engine-reserved prefix %q: %s", what, id, p.prefix, p.why)
		}
	}
	return nil
}

// quoteIfPrintable quotes s when it is short printable ASCII, else returns
// a placeholder.
func quoteIfPrintable(s string) string {
	if len(s) > MaxIdentifierBytes {
		return "(not shown)"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "(not shown)"
		}
	}
	return fmt.Sprintf("%q", s)
}

func schemaErr(format string, args ...any) error {
	e := driver.Errorf(CodeSchemaInvalid, format, args...)
	e.Rule = joinRules(e.Rule, "SCH-2")
	return e
}

// copySchema returns a deep copy of s.
func copySchema(s Schema) Schema {
	out := Schema{Version: s.Version}
	if s.Tables != nil {
		out.Tables = make([]Table, len(s.Tables))
	}
	for i, t := range s.Tables {
		ct := Table{Name: t.Name, PrimaryKey: t.PrimaryKey}
		if t.Columns != nil {
			ct.Columns = append([]Column{}, t.Columns...)
		}
		if t.Scopes != nil {
			ct.Scopes = append([]Scope{}, t.Scopes...)
		}
		if t.Indexes != nil {
			ct.Indexes = make([]Index, len(t.Indexes))
			for j, ix := range t.Indexes {
				ct.Indexes[j] = Index{Name: ix.Name, Unique: ix.Unique}
				if ix.Columns != nil {
					ct.Indexes[j].Columns = append([]string{}, ix.Columns...)
				}
			}
		}
		out.Tables[i] = ct
	}
	return out
}

// compiledTable is a table of an ensured schema with lookup maps for
// validation.
type compiledTable struct {
	Table
	cols    map[string]Column
	scopeOf map[string]string // variable → column
	indexes map[string]Index
	keyed   map[string]bool // columns that are index keys: scope and declared-index columns
}

// compiledSchema is the schema a Store validates against.
type compiledSchema struct {
	schema Schema
	tables map[string]*compiledTable
}

// newCompiledSchema builds lookup maps over s, which CompileSchema has
// accepted and copied.
func newCompiledSchema(s Schema) *compiledSchema {
	cs := &compiledSchema{schema: s, tables: make(map[string]*compiledTable, len(s.Tables))}
	for _, t := range s.Tables {
		ct := &compiledTable{Table: t, cols: map[string]Column{}, scopeOf: map[string]string{},
			indexes: map[string]Index{}, keyed: map[string]bool{}}
		for _, c := range t.Columns {
			ct.cols[c.Name] = c
		}
		for _, sc := range t.Scopes {
			ct.scopeOf[sc.Variable] = sc.Column
			ct.keyed[sc.Column] = true
		}
		for _, ix := range t.Indexes {
			ct.indexes[ix.Name] = ix
			for _, c := range ix.Columns {
				ct.keyed[c] = true
			}
		}
		cs.tables[t.Name] = ct
	}
	return cs
}

// ScopesOf returns the scopes of a row of table t with values v: for each
// scope of t, variable → the string value of its column (V-4). A scope
// column missing from v, or holding a non-string, is left out, so a row
// built from bad values still fails V-4 in UpsertRow rather than here.
// The result is never nil.
func ScopesOf(t Table, v Values) Scopes {
	out := make(Scopes, len(t.Scopes))
	for _, sc := range t.Scopes {
		if s, ok := v[sc.Column].(string); ok {
			out[sc.Variable] = s
		}
	}
	return out
}

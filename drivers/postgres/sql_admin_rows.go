package postgres

import "strings"

// listRows returns the statement of one page of the admin row listing
// (ADM-3): $1 partition, $2 after id (exclusive; "" = from the first), $3
// limit → selectList's columns, ascending by id: a walk of the table's
// primary key (partition, id) that stops at the limit. The text is fixed
// per table, so pgx prepares it once per connection.
func (x *table) listRows() string {
	pk := quote(x.def.PrimaryKey)
	return strings.Join([]string{"SELECT", x.selectList(""), "FROM", quote(x.def.Name), "WHERE", quote(partitionColumn),
		"= $1 AND", pk, "> $2 ORDER BY", pk, "LIMIT $3"}, " ")
}

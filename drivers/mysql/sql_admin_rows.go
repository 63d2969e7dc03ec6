package mysql

// listRows returns the statement of one page of the admin row listing
// (ADM-3): p, after id (exclusive; "" = from the first), limit → the
// select list, ascending by id: a range read of the table's primary key
// (p, id) that stops at the limit (FORCE INDEX pins it).
func (x *table) listRows() string {
	pk := quoteIdent(x.def.PrimaryKey)
	return "SELECT " + x.sel + " FROM " + quoteIdent(x.def.Name) + " FORCE INDEX (PRIMARY) WHERE " + quoteIdent(partitionColumn) +
		" = ? AND " + pk + " > ? ORDER BY " + pk + " LIMIT ?"
}

package sqlitesql

// ListRows returns the statement of one page of the admin capability's
// row listing (ADM-3): ?1 partition, ?2 after row id (exclusive; "" =
// from the first), ?3 limit → the columns of SelectList, ascending by id.
// A walk of the table's primary key ("_sync_partition", pk) from ?2 that
// stops at the limit. The text is fixed per table, so a driver's
// statement cache prepares it once.
func (x *Table) ListRows() string {
	pk := Quote(x.Def.PrimaryKey)
	return "SELECT " + x.SelectList() + " FROM " + Quote(x.Def.Name) + " WHERE " + Quote(PartitionColumn) +
		" = ?1 AND " + pk + " > ?2 ORDER BY " + pk + " LIMIT ?3"
}

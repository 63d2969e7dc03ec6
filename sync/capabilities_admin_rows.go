package sync

import "context"

// ListRows returns one page of the current rows of table in partition,
// whatever their scopes (ADM-3): the rows whose id is bytewise greater
// than afterRowID ("" = from the first), ascending bytewise by id, at
// most limit, each whole (id, server version, scopes, values). Passing
// the last id of a page as the next afterRowID reaches every row exactly
// once; a page shorter than limit is the last. It is a console's (and a
// test host's) view of a table: a sync client reads through Pull, within
// its scopes. Each page is a walk of the table's primary key that stops
// at the limit.
//
// Checks: V-1 partition; a known table (SCH-8); afterRowID "" or a valid
// row id (V-2); limit 1…10,000 (CodeInvalidLimit, V-5). A driver without
// the admin capability → CodeUnsupported (ERR-2).
func (s *Store) ListRows(ctx context.Context, partition, table, afterRowID string, limit int) (_ []Row, err error) {
	defer s.observe(&ctx, "Store.ListRows", partition).done(&err)
	const op = "ListRows"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	a, err := s.admin(op)
	if err != nil {
		return nil, err
	}
	if err := idPartition.check(op, partition); err != nil {
		return nil, err
	}
	if _, err := s.schema.Load().table(op, table); err != nil {
		return nil, err
	}
	if err := firstErr(idAfterRow.checkOptional(op, afterRowID), checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return a.ListRows(ctx, partition, table, afterRowID, limit)
}

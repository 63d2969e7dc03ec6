package sync

import (
	"context"

	"github.com/syncstore/syncstore/driver"
)

// AllowReplica returns ctx marked so that this Store's reads made with it
// may be served by its read replica (SetReadReplica; REP-1). See
// driver.AllowReplica.
func AllowReplica(ctx context.Context) context.Context { return driver.AllowReplica(ctx) }

// SetReadReplica gives the Store a read replica: a Store opened on a
// replica of the same database (a PostgreSQL hot standby: sync.Open on
// the standby's DSN opens it read-only), whose schema the host ensured.
// From then on the reads made with a context marked by AllowReplica —
// ReadCommitWindow, ScanRows, GetRow, MaxCommitSeq, ScanRowsByIndex and
// AuthoritativeQuery — go to the replica (REP-1), which serves each from
// one snapshot of the primary at some earlier commit, never newer than
// the head it reports (REP-2). A window read whose cursor is beyond the
// replica's head (the client got it from the primary and the replica
// trails) is served by the primary instead, so a client's cursor never
// goes backwards (REP-3). Reads inside a Tx, writes, Push and Pull always
// use the primary. nil removes the replica. The Store does not own the
// replica: close it after the Store. Safe for concurrent use.
func (s *Store) SetReadReplica(replica *Store) {
	if replica == nil {
		s.replica.Store(nil)
		return
	}
	s.replica.Store(replica)
}

// reader returns the Conn a read made with ctx goes to (REP-1).
func (s *Store) reader(ctx context.Context) driver.Conn {
	if r := s.replica.Load(); r != nil && driver.ReplicaAllowed(ctx) {
		return r.conn
	}
	return s.conn
}

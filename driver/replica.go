package driver

import "context"

// replicaKey marks a context whose reads may be served by a read replica
// (REP-1).
type replicaKey struct{}

// AllowReplica returns ctx marked so that the reads made with it may be
// served by a read replica the store was given (REP-1…REP-3): window
// reads, scans, row reads, index lookups, authoritative queries and
// MaxCommitSeq outside a transaction. Reads inside a Tx and every write
// ignore the mark.
func AllowReplica(ctx context.Context) context.Context {
	return context.WithValue(ctx, replicaKey{}, true)
}

// ReplicaAllowed reports whether ctx was marked by AllowReplica.
func ReplicaAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(replicaKey{}).(bool)
	return v
}

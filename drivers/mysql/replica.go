package mysql

import (
	"context"
	"database/sql"

	"github.com/syncstore/syncstore/driver"
)

// Read replicas (REP-1…REP-3, docs/scaling.md). Open on a server with
// read_only=ON (a replica) opens the Conn read-only: nothing is created
// or upgraded, the stored format must already be this driver's, Begin is
// refused, and every session is read-only (tx_read_only / transaction_
// read_only), so any other write fails on the server with 1792 and comes
// back as the same error. A host hands such a store to the primary's
// sync.Store.SetReadReplica. Every read is one statement or one READ ONLY
// consistent-snapshot transaction, so it serves one snapshot of the
// replica — the primary at some earlier commit — with the partition's
// head read in it.

// erReadOnlyTx is ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION.
const erReadOnlyTx = 1792

// readOnlyVar is the session variable that makes every transaction
// read-only on MariaDB or MySQL.
func readOnlyVar(maria bool) string {
	if maria {
		return "tx_read_only"
	}
	return "transaction_read_only"
}

// openReplica checks a replica's stored format instead of creating the
// infrastructure.
func (c *Conn) openReplica(ctx context.Context) error {
	var format string
	err := c.queryRow(ctx, nil, selectMeta, []any{metaFormat}, &format)
	if err == sql.ErrNoRows || (err == nil && format != formatVersion) {
		return driver.Errorf(driver.CodeSchemaMismatch,
			"mysql: the replica holds no store of this driver's format %s yet (open the primary first and let the replica apply it)", formatVersion)
	}
	return err
}

// errReplica is every write's error on a Conn opened on a replica.
func errReplica(what string) error {
	return driver.Errorf(driver.CodeInvalidArgument,
		"%s: the store is a read-only replica; write through the primary (REP-1)", what)
}

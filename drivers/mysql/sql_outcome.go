package mysql

const (
	selectOutcomes     = `SELECT outcomes FROM _sync_partitions WHERE p = ?`
	killSession        = `KILL CONNECTION ?`
	selectSessionAlive = `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?`
	// selectOutcomesColumn: does the store's _sync_partitions have the
	// outcomes column (stores created before it get it on open)?
	selectOutcomesColumn = `SELECT COUNT(*) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_sync_partitions' AND COLUMN_NAME = 'outcomes'`
	addOutcomesColumn = `ALTER TABLE _sync_partitions ADD COLUMN outcomes VARBINARY(` + outcomeRingBytes + `) NOT NULL DEFAULT ''`
)

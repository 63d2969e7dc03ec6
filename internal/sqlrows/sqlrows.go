// Package sqlrows reads database/sql result sets for the drivers built on
// database/sql (sqlite, mysql): what pgx.CollectRows is to postgres.
package sqlrows

import "database/sql"

// Collect reads every row of rows with scan, then closes rows. On a scan
// error it returns nil and that error; otherwise the rows read (nil when
// none) and rows.Err(). The caller maps the error.
func Collect[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// String scans a row of one string column (Collect's scan).
func String(rows *sql.Rows) (string, error) {
	var s string
	err := rows.Scan(&s)
	return s, err
}

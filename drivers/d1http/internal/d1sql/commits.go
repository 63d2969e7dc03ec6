package d1sql

import "github.com/syncstore/syncstore/internal/sqlitesql"

// D1ReadCommits is sqlitesql.ReadCommits (LOG-1…LOG-4) with each change's
// row version and its commit's time as text, so values beyond 2^53
// survive the JSON transport (VAL-1).
var D1ReadCommits = D1Window(sqlitesql.ReadCommits)

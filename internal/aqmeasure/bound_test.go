//go:build aqmeasure

package aqmeasure

import (
	"errors"

	"github.com/syncstore/syncstore/driver"
)

// limitBound names the bound of a *driver.QueryLimitError in err, else "".
func limitBound(err error) string {
	var le *driver.QueryLimitError
	if errors.As(err, &le) {
		return string(le.Bound)
	}
	return ""
}

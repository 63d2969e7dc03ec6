package d1http

import (
	"context"
	"net/http"
	"net/url"

	"github.com/syncstore/syncstore/driver"
)

var _ driver.Backuper = Driver{}

// Backup marks the whole store at dsn with D1's Time Travel
// (driver.Backuper, test support): GET …/d1/database/{id}/time_travel/bookmark
// answers a bookmark of the database as it is now, and restore is POST
// …/time_travel/restore?bookmark=…, which puts the database back to it
// (D1 keeps the state it replaced under another bookmark). D1 expires
// bookmarks after 30 days and has nothing to delete, so drop does
// nothing. The D1 double (d1test) serves both calls.
func (Driver) Backup(ctx context.Context, dsn string) (restore, drop func(context.Context) error, err error) {
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	if cfg.database == "" {
		return nil, nil, driver.Errorf(driver.CodeInvalidArgument, "d1http: the DSN names no database")
	}
	base := cfg.accountURL() + "/" + url.PathEscape(cfg.database) + "/time_travel"
	var out struct {
		Success bool `json:"success"`
		Result  struct {
			Bookmark string `json:"bookmark"`
		} `json:"result"`
	}
	if err := adminCall(ctx, cfg, http.MethodGet, base+"/bookmark", nil, &out); err != nil {
		return nil, nil, err
	}
	if !out.Success || out.Result.Bookmark == "" {
		return nil, nil, driver.Errorf(driver.CodeUnavailable, "d1http: D1 answered no bookmark")
	}
	mark := out.Result.Bookmark
	restore = func(ctx context.Context) error {
		var out struct {
			Success bool `json:"success"`
		}
		if err := adminCall(ctx, cfg, http.MethodPost, base+"/restore?bookmark="+url.QueryEscape(mark), nil, &out); err != nil {
			return err
		}
		if !out.Success {
			return driver.Errorf(driver.CodeUnavailable, "d1http: D1 did not restore the database")
		}
		return nil
	}
	drop = func(context.Context) error { return nil }
	return restore, drop, nil
}

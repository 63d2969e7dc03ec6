package d1http

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/syncstore/syncstore/driver"
)

// createDatabase creates a database named name in cfg's account and
// returns its id (D1's "uuid").
func createDatabase(ctx context.Context, cfg config, name string) (string, error) {
	body, _ := json.Marshal(map[string]string{"name": name})
	var out struct {
		Success bool `json:"success"`
		Result  struct {
			UUID string `json:"uuid"`
		} `json:"result"`
	}
	if err := adminCall(ctx, cfg, http.MethodPost, cfg.accountURL(), body, &out); err != nil {
		return "", err
	}
	if !out.Success || out.Result.UUID == "" {
		return "", driver.Errorf(driver.CodeUnavailable, "d1http: D1 did not create the database")
	}
	return out.Result.UUID, nil
}

// deleteDatabase deletes database id of cfg's account.
func deleteDatabase(ctx context.Context, cfg config, id string) error {
	return adminCall(ctx, cfg, http.MethodDelete, cfg.accountURL()+"/"+url.PathEscape(id), nil, nil)
}

func adminCall(ctx context.Context, cfg config, method, u string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return driver.Wrap(driver.CodeInvalidArgument, err, "d1http: build a database request")
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.token)
	}
	resp, err := (&http.Client{Transport: sharedTransport}).Do(req)
	if err != nil {
		return driver.Wrap(driver.CodeUnavailable, err, "d1http: database request")
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return driver.Errorf(driver.CodeUnavailable, "d1http: database request: HTTP %d", resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return driver.Wrap(driver.CodeUnavailable, err, "d1http: database request: malformed answer")
		}
	}
	return nil
}

package storelayout

import (
	"encoding/json"

	"github.com/syncstore/syncstore/driver"
)

// DecodeScopes decodes a change's stored scopes (_sync_changes.scopes, a
// JSON object variable → value that each engine writes with the change,
// e.g. sqlitesql.InsertChanges).
func DecodeScopes(text string) (driver.Scopes, error) {
	var s driver.Scopes
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, driver.Wrap(driver.CodeInternal, err, "decode stored change scopes")
	}
	return s, nil
}

type subscriptionWire struct {
	ID     string              `json:"id"`
	Table  string              `json:"table"`
	Scopes map[string][]string `json:"scopes"`
}

// EncodeSubscriptions encodes a client's subscriptions for
// _sync_clients.subscriptions, order kept (CR-1).
func EncodeSubscriptions(subs []driver.Subscription) (string, error) {
	w := make([]subscriptionWire, len(subs))
	for i, s := range subs {
		w[i] = subscriptionWire{ID: s.ID, Table: s.Table, Scopes: s.Scopes}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", driver.Wrap(driver.CodeInternal, err, "encode subscriptions")
	}
	return string(b), nil
}

// DecodeSubscriptions decodes what EncodeSubscriptions wrote.
func DecodeSubscriptions(text string) ([]driver.Subscription, error) {
	var w []subscriptionWire
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		return nil, driver.Wrap(driver.CodeInternal, err, "decode stored subscriptions")
	}
	out := make([]driver.Subscription, len(w))
	for i, s := range w {
		out[i] = driver.Subscription{ID: s.ID, Table: s.Table, Scopes: driver.ScopeFilter(s.Scopes)}
	}
	return out, nil
}

// JSONList encodes values as a JSON array of strings, the argument of the
// "IN (SELECT value FROM json_each(?))" predicates.
func JSONList(values []string) (string, error) {
	b, err := json.Marshal(values)
	if err != nil {
		return "", driver.Wrap(driver.CodeInternal, err, "encode a scope value list")
	}
	return string(b), nil
}

package server

import (
	"reflect"
	"testing"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

func grantOf(m map[string][]string) grant {
	g := grant{ok: true, vars: map[string]valueSet{}}
	for k, vs := range m {
		set := valueSet{values: map[string]struct{}{}}
		for _, v := range vs {
			if v == wildcard {
				set.any = true
			}
			set.values[v] = struct{}{}
		}
		g.vars[k] = set
	}
	return g
}

// TestEffective is §3.2 rules 4–5.
func TestEffective(t *testing.T) {
	cases := []struct {
		name      string
		requested map[string][]string
		allowed   map[string][]string
		failed    bool
		want      map[string][]string
	}{
		{"intersection", map[string][]string{"p": {"a", "b", "c"}}, map[string][]string{"p": {"b", "c", "d"}}, false, map[string][]string{"p": {"b", "c"}}},
		{"wildcard passes requested", map[string][]string{"p": {"a", "a", "z"}}, map[string][]string{"p": {"*"}}, false, map[string][]string{"p": {"a", "z"}}},
		{"empty intersection revokes", map[string][]string{"p": {"a"}}, map[string][]string{"p": {"b"}}, false, nil},
		{"key missing from allowed revokes", map[string][]string{"p": {"a"}, "o": {"x"}}, map[string][]string{"p": {"a"}}, false, nil},
		{"partial loss revokes", map[string][]string{"p": {"a"}, "o": {"x"}}, map[string][]string{"p": {"a"}, "o": {"y"}}, false, nil},
		{"no requested keys revokes", map[string][]string{}, map[string][]string{"p": {"*"}}, false, nil},
		{"resolver failed revokes", map[string][]string{"p": {"a"}}, map[string][]string{"p": {"*"}}, true, nil},
		{"keys only allowed stay out", map[string][]string{"p": {"a"}}, map[string][]string{"p": {"a"}, "o": {"*"}}, false, map[string][]string{"p": {"a"}}},
	}
	for _, tc := range cases {
		g := grantOf(tc.allowed)
		g.ok = !tc.failed
		got, active := effective(tc.requested, g)
		if active != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v %v, want %v", tc.name, got, active, tc.want)
		}
	}
}

// TestAuthorizeRow is §3.4 steps 2–3: every declared variable, a
// non-empty allowed value.
func TestAuthorizeRow(t *testing.T) {
	tb := &table{scopeVar: map[string]ssp2.CompiledPattern{"p": {Variable: "p"}, "o": {Variable: "o"}}}
	g := grantOf(map[string][]string{"p": {"a"}, "o": {"*"}})
	for _, tc := range []struct {
		scopes sync.Scopes
		ok     bool
	}{
		{sync.Scopes{"p": "a", "o": "anyone"}, true},
		{sync.Scopes{"p": "b", "o": "anyone"}, false},
		{sync.Scopes{"p": "a"}, false},
		{sync.Scopes{"p": "a", "o": ""}, false},
	} {
		if got := authorizeRow(tb, tc.scopes, g); got != tc.ok {
			t.Errorf("%v: %v", tc.scopes, got)
		}
	}
	if authorizeRow(tb, sync.Scopes{"p": "a", "o": "x"}, grant{}) {
		t.Error("a failed resolver authorized a write")
	}
	if !matchesEffective(sync.Scopes{"p": "a", "o": "x"}, map[string][]string{"p": {"a", "b"}}) ||
		matchesEffective(sync.Scopes{"o": "x"}, map[string][]string{"p": {"a"}}) {
		t.Error("matchesEffective")
	}
}

func TestParseBootstrapState(t *testing.T) {
	f := func(state string) *ssp2.Subscription {
		return &ssp2.Subscription{Table: "tasks", BootstrapState: sync.JSON(state)}
	}
	for state, want := range map[string][2]any{
		``: {"", false},
		`{"asOfCommitSeq":3,"tables":["tasks"],"tableIndex":0,"rowCursor":"tok"}`: {"tok", false},
		`{"asOfCommitSeq":3,"tables":["notes"],"tableIndex":0,"rowCursor":"tok"}`: {"", true},
		`{"asOfCommitSeq":3,"tables":["tasks"],"tableIndex":0,"rowCursor":null}`:  {"", true},
		`{"asOfCommitSeq":3,"tables":["tasks"],"tableIndex":1,"rowCursor":"tok"}`: {"", true},
		`7`:    {"", true},
		`null`: {"", true},
	} {
		tok, restart := parseBootstrapState(f(state))
		if tok != want[0] || restart != want[1] {
			t.Errorf("%s: %q %v", state, tok, restart)
		}
	}
}

func TestNegotiateEncoding(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		size int64
		want string
	}{
		{[]string{"zstd, gzip"}, -1, "zstd"},
		{[]string{"gzip"}, -1, "gzip"},
		{[]string{"gzip;q=1, zstd;q=0.5"}, -1, "gzip"},
		{[]string{"zstd;q=0, gzip;q=0"}, -1, ""},
		{[]string{"*"}, -1, "zstd"},
		{[]string{"br"}, -1, ""},
		{nil, -1, ""},
		{[]string{"zstd"}, 100, ""},
	} {
		if got := negotiateEncoding(tc.in, tc.size); got != tc.want {
			t.Errorf("%v/%d: %q, want %q", tc.in, tc.size, got, tc.want)
		}
	}
	if !etagMatches([]string{`"x", W/"y"`}, `"y"`) || etagMatches([]string{`"x"`}, `"y"`) || !etagMatches([]string{"*"}, `"y"`) {
		t.Error("etagMatches")
	}
}

func TestLimitsDefaults(t *testing.T) {
	l, err := Limits{}.withDefaults()
	if err != nil || l.MaxOperationsPerRequest != 500 || l.InlineSegmentMaxBytes != 256<<10 || l.MaxPresenceBytes != 16<<10 ||
		l.SegmentTTL != DefaultSegmentTTL || l.HeartbeatInterval != DefaultHeartbeatInterval {
		t.Fatalf("%+v %v", l, err)
	}
	for _, bad := range []Limits{{MaxOperationsPerRequest: sync.MaxPushOps + 1}, {MaxRequestBytes: 10}, {MaxDeltaBytes: 8 << 20}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

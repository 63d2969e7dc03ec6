package ssp2_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/internal/upstream"
	"github.com/syncstore/syncstore/ssp2"
)

// The golden vectors of upstream's spec/vectors (SPEC Appendix A), read
// where they are (internal/upstream), never copied: every valid case
// decodes, renders to its .json (deep-equal, and byte-equal once
// indented as the generator writes it), re-encodes byte-for-byte; every
// invalid case fails with the manifest's code.

type manifestCase struct {
	Name  string `json:"name"`
	Bin   string `json:"bin"`
	JSON  string `json:"json"`
	Error string `json:"error"`
}

type manifest struct {
	Kind    string         `json:"kind"`
	Cases   []manifestCase `json:"cases"`
	Invalid []manifestCase `json:"invalid"`
}

func loadManifest(t *testing.T, kind string) (string, manifest) {
	t.Helper()
	dir := filepath.Join(upstream.Vectors(t), kind)
	var m manifest
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "manifest.json")), &m); err != nil {
		t.Fatal(err)
	}
	if m.Kind != kind || len(m.Cases) == 0 {
		t.Fatalf("manifest of %s: kind %q, %d cases", kind, m.Kind, len(m.Cases))
	}
	return dir, m
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual compares two JSON texts as values (numbers as float64, key
// order ignored).
func jsonEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: rendering is not JSON: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s: rendering differs from the vector (-want +got):\n%s", what, d)
	}
}

// indentLikeVectors indents a compact rendering as the generator writes
// the .json files (JSON.stringify(v, null, 2) and a newline).
func indentLikeVectors(t *testing.T, compact []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func TestVectorsMessages(t *testing.T) {
	for _, kind := range []string{"request", "response"} {
		dir, m := loadManifest(t, kind)
		for _, c := range m.Cases {
			t.Run(kind+"/"+c.Name, func(t *testing.T) {
				bin := readFile(t, filepath.Join(dir, c.Bin))
				want := readFile(t, filepath.Join(dir, c.JSON))
				msg, err := ssp2.Decode(bin)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if msg.Kind.String() != kind {
					t.Fatalf("decoded a %s", msg.Kind)
				}
				got := msg.Render()
				jsonEqual(t, c.Name, got, want)
				if ind := indentLikeVectors(t, got); !bytes.Equal(ind, want) {
					t.Errorf("rendering is deep-equal but not byte-equal to %s:\n%s", c.JSON, ind)
				}
				enc, err := msg.Encode()
				if err != nil {
					t.Fatalf("re-encode: %v", err)
				}
				if !bytes.Equal(enc, bin) {
					t.Errorf("re-encoding differs from %s:\n got %x\nwant %x", c.Bin, enc, bin)
				}
				if kind == "request" {
					req, err := ssp2.DecodeRequest(bin)
					if err != nil {
						t.Fatalf("DecodeRequest: %v", err)
					}
					if req.Header == nil || req.Header.ClientID == "" {
						t.Errorf("DecodeRequest: no header")
					}
				} else {
					if _, err := ssp2.DecodeRequest(bin); ssp2.CodeOf(err) != ssp2.CodeInvalidRequest {
						t.Errorf("DecodeRequest of a response: %v, want %s", err, ssp2.CodeInvalidRequest)
					}
				}
			})
		}
		for _, c := range m.Invalid {
			t.Run(kind+"/invalid/"+c.Name, func(t *testing.T) {
				bin := readFile(t, filepath.Join(dir, c.Bin))
				_, err := ssp2.Decode(bin)
				if got := ssp2.CodeOf(err); got != ssp2.Code(c.Error) {
					t.Fatalf("decode error %v: code %q, want %q", err, got, c.Error)
				}
			})
		}
	}
}

func TestVectorsSegments(t *testing.T) {
	dir, m := loadManifest(t, "segment")
	for _, c := range m.Cases {
		t.Run(c.Name, func(t *testing.T) {
			bin := readFile(t, filepath.Join(dir, c.Bin))
			want := readFile(t, filepath.Join(dir, c.JSON))
			seg, err := ssp2.DecodeSegment(bin)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := ssp2.ValidateSegment(bin); err != nil {
				t.Fatalf("validate: %v", err)
			}
			got := seg.Render()
			jsonEqual(t, c.Name, got, want)
			if ind := indentLikeVectors(t, got); !bytes.Equal(ind, want) {
				t.Errorf("rendering is deep-equal but not byte-equal to %s:\n%s", c.JSON, ind)
			}
			enc, err := seg.Encode()
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			if !bytes.Equal(enc, bin) {
				t.Errorf("re-encoding differs:\n got %x\nwant %x", enc, bin)
			}
			r, err := ssp2.Render(bin)
			if err != nil || !bytes.Equal(r, got) {
				t.Errorf("Render(bytes) = %s, %v", r, err)
			}
		})
	}
	for _, c := range m.Invalid {
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			bin := readFile(t, filepath.Join(dir, c.Bin))
			_, err := ssp2.DecodeSegment(bin)
			if got := ssp2.CodeOf(err); got != ssp2.Code(c.Error) {
				t.Fatalf("decode error %v: code %q, want %q", err, got, c.Error)
			}
			if err := ssp2.ValidateSegment(bin); ssp2.CodeOf(err) != ssp2.Code(c.Error) {
				t.Fatalf("validate error %v, want %q", err, c.Error)
			}
		})
	}
}

// isClientMessage tells a client→server vector from a server→client one:
// the client's messages are the ack ("type") and the presence publish (a
// presence event without kind or error).
func isClientMessage(t *testing.T, text []byte) bool {
	t.Helper()
	var v struct {
		Type  *string        `json:"type"`
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	if err := json.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	if v.Type != nil {
		return true
	}
	_, kind := v.Data["kind"]
	_, isErr := v.Data["error"]
	return v.Event == "presence" && !kind && !isErr
}

func TestVectorsRealtime(t *testing.T) {
	dir, m := loadManifest(t, "realtime")
	for _, c := range m.Cases {
		t.Run(c.Name, func(t *testing.T) {
			text := readFile(t, filepath.Join(dir, c.JSON))
			var again []byte
			if isClientMessage(t, text) {
				msg, err := ssp2.ParseClientMessage(text)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				switch msg.Kind {
				case ssp2.ClientAck:
					again, err = msg.Ack.AppendJSON(nil)
				case ssp2.ClientPresence:
					again, err = msg.Presence.AppendJSON(nil)
				default:
					t.Fatalf("parsed as unknown %q", msg.Name)
				}
				if err != nil {
					t.Fatal(err)
				}
			} else {
				ev, err := ssp2.ParseServerEvent(text)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				switch ev.Kind {
				case ssp2.EventHello:
					again, err = ev.Hello.AppendJSON(nil)
				case ssp2.EventSync:
					again, err = ev.Sync.AppendJSON(nil)
				case ssp2.EventHeartbeat:
					again, err = ev.Heartbeat.AppendJSON(nil)
				case ssp2.EventPresence:
					again, err = ev.Presence.AppendJSON(nil)
				case ssp2.EventPresenceError:
					again, err = ev.PresenceError.AppendJSON(nil)
				default:
					t.Fatalf("parsed as unknown event %q", ev.Name)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			jsonEqual(t, c.Name, again, text)
			if ind := indentLikeVectors(t, again); !bytes.Equal(ind, text) {
				t.Errorf("re-encoding is deep-equal but not byte-equal to %s:\n%s", c.JSON, ind)
			}
		})
	}
	for _, c := range m.Invalid {
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			text := readFile(t, filepath.Join(dir, c.JSON))
			var err error
			if isClientMessage(t, text) {
				_, err = ssp2.ParseClientMessage(text)
			} else {
				_, err = ssp2.ParseServerEvent(text)
			}
			if got := ssp2.CodeOf(err); got != ssp2.Code(c.Error) {
				t.Fatalf("parse error %v: code %q, want %q", err, got, c.Error)
			}
		})
	}
}

package ssp2conf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestHostBlobs: an instance serves §5.9 blobs from its own directory;
// setBlobPresign makes downloads answer URLs under /i/{id}/blob-cdn/ that
// the host serves without authentication until the virtual clock passes
// their expiry; closing the instance removes the directory.
func TestHostBlobs(t *testing.T) {
	h := newHost(t, 4, 0)
	id := h.create("")
	h.host.mu.Lock()
	in := h.host.instances[id]
	h.host.mu.Unlock()
	do := func(method, url, actor string, body []byte) (int, []byte, http.Header) {
		t.Helper()
		if !strings.HasPrefix(url, "http") {
			url = h.srv.URL + "/i/" + id + url
		}
		r, _ := http.NewRequest(method, url, bytes.NewReader(body))
		if actor != "" {
			r.Header.Set("Authorization", "Bearer "+actor)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	body := []byte("attachment")
	sum := sha256.Sum256(body)
	blob := "sha256:" + hex.EncodeToString(sum[:])
	if st, b, _ := do("PUT", "/blobs/"+blob, "alice", body); st != 200 {
		t.Fatalf("upload: %d %s", st, b)
	}
	if st := h.post("/i/"+id+"/ctl/setBlobPresign", `{"enabled":true}`, nil); st != 200 {
		t.Fatalf("setBlobPresign: %d", st)
	}
	// Not referenced by any row: forbidden, URL or not.
	if st, b, _ := do("GET", "/blobs/"+blob, "alice", nil); st != 403 || !strings.Contains(string(b), "blob.forbidden") {
		t.Fatalf("unreferenced download: %d %s", st, b)
	}
	// The grant flow mints a URL under the instance's blob-cdn route.
	other := []byte("granted")
	osum := sha256.Sum256(other)
	oid := "sha256:" + hex.EncodeToString(osum[:])
	st, b, _ := do("POST", "/blobs/"+oid+"/upload-grant", "alice", []byte(`{"byteLength":7}`))
	var g struct {
		URL            string `json:"url"`
		URLExpiresAtMs int64  `json:"urlExpiresAtMs"`
	}
	if st != 200 || json.Unmarshal(b, &g) != nil || !strings.HasPrefix(g.URL, h.srv.URL+"/i/"+id+"/blob-cdn/") || g.URLExpiresAtMs != 1750000000000+900000 {
		t.Fatalf("grant: %d %s", st, b)
	}
	if st, b, _ := do("PUT", g.URL, "", other); st != 200 {
		t.Fatalf("PUT to the grant: %d %s", st, b)
	}
	if _, err := in.blobs.store.Stat(t.Context(), "part-1", oid); err != nil {
		t.Fatalf("the granted upload is not stored: %v", err)
	}
	// Past the expiry by the virtual clock, the URL is refused.
	h.post("/i/"+id+"/ctl/advanceClock", `{"ms":900000}`, nil)
	if st, _, _ := do("PUT", g.URL, "", other); st != 403 {
		t.Fatalf("expired grant: %d", st)
	}
	if st := h.post("/i/"+id+"/ctl/setBlobPresign", `{"enabled":false}`, nil); st != 200 {
		t.Fatal("setBlobPresign off")
	}
	if st, b, _ := do("POST", "/blobs/"+oid+"/upload-grant", "alice", []byte(`{"byteLength":7}`)); st != 200 || string(b) != "{}" {
		t.Fatalf("grant with presign off: %d %s", st, b)
	}
	dir := in.blobs.dir
	if st := h.post("/i/"+id+"/ctl/close", `{}`, nil); st != 200 {
		t.Fatal("close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the instance's blob directory outlived it: %v", err)
	}
}

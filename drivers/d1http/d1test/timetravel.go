package d1test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// D1's Time Travel (its backups) in the double:
//
//	GET  …/database/{database}/time_travel/bookmark           → result {bookmark}
//	POST …/database/{database}/time_travel/restore?bookmark=… → result {bookmark, previous_bookmark, message}
//
// D1 keeps every minute of 30 days; the double keeps what a bookmark
// request saw: each GET bookmark copies the database as it is then (the
// serialized SQLite image) under a new bookmark, and a restore puts that
// copy back, first keeping the state it replaces under previous_bookmark,
// as D1 does. A bookmark of a past moment (?timestamp=) is not
// served: 400, code 7400. Bookmarks sort oldest to newest, as D1's do;
// a database keeps at most MaxBookmarks of them (the oldest go first),
// and they go with the database. A restore of an unknown bookmark: 400,
// code 7400.

// MaxBookmarks bounds the bookmarks (database copies) the double keeps
// per database.
const MaxBookmarks = 16

// bookmarks are one database's kept copies, oldest first.
type bookmarks struct {
	seq   int64
	order []string
	image map[string][]byte
}

// snapshot copies d under a new bookmark; d.mu is held.
func (d *database) snapshot(ctx context.Context) (string, error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var img []byte
	err = conn.Raw(func(dc any) error {
		s, ok := dc.(interface{ Serialize() ([]byte, error) })
		if !ok {
			return errors.New("the SQLite connection cannot serialize")
		}
		img, err = s.Serialize()
		return err
	})
	if err != nil {
		return "", err
	}
	if d.marks.image == nil {
		d.marks.image = map[string][]byte{}
	}
	d.marks.seq++
	var b [8]byte
	_, _ = rand.Read(b[:])
	// Zero-padded sequence first: bookmarks sort oldest to newest.
	seq := strconv.FormatInt(d.marks.seq, 16)
	mark := "00000000"[len(seq):] + seq + "-" + strconv.FormatInt(time.Now().Unix(), 16) + "-" + hex.EncodeToString(b[:])
	if len(d.marks.order) >= MaxBookmarks {
		delete(d.marks.image, d.marks.order[0])
		d.marks.order = d.marks.order[1:]
	}
	d.marks.order = append(d.marks.order, mark)
	d.marks.image[mark] = img
	return mark, nil
}

// restore puts bookmark mark's copy back into d; d.mu is held.
func (d *database) restore(ctx context.Context, mark string) error {
	img := d.marks.image[mark]
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		s, ok := dc.(interface{ Deserialize([]byte) error })
		if !ok {
			return errors.New("the SQLite connection cannot deserialize")
		}
		return s.Deserialize(append([]byte(nil), img...))
	})
}

// serveTimeTravel answers op ("bookmark" or "restore") on d.
func (h *Handler) serveTimeTravel(w http.ResponseWriter, r *http.Request, d *database, op string) {
	q := r.URL.Query()
	if q.Has("timestamp") {
		writeJSON(w, http.StatusBadRequest, failure(7400, "the D1 double keeps bookmarks of the moments they were asked for only; no timestamp"))
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ok := func(result any) {
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "errors": []any{}, "messages": []any{}, "result": result})
	}
	switch {
	case op == "bookmark" && r.Method == http.MethodGet:
		mark, err := d.snapshot(r.Context())
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, failure(7500, "bookmark: "+err.Error()))
			return
		}
		ok(map[string]any{"bookmark": mark})
	case op == "restore" && r.Method == http.MethodPost:
		mark := q.Get("bookmark")
		if _, known := d.marks.image[mark]; !known {
			writeJSON(w, http.StatusBadRequest, failure(7400, "no such bookmark"))
			return
		}
		prev, err := d.snapshot(r.Context())
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, failure(7500, "restore: "+err.Error()))
			return
		}
		if _, known := d.marks.image[mark]; !known { // evicted by prev
			writeJSON(w, http.StatusBadRequest, failure(7400, "no such bookmark"))
			return
		}
		if err := d.restore(r.Context(), mark); err != nil {
			writeJSON(w, http.StatusInternalServerError, failure(7500, "restore: "+err.Error()))
			return
		}
		ok(map[string]any{"bookmark": mark, "previous_bookmark": prev, "message": "Database restored successfully"})
	default:
		writeJSON(w, http.StatusNotFound, failure(7000, "No route for that URI"))
	}
}

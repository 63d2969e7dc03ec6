package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileSegmentStore is a SegmentStore in a directory: one file per segment
// and one small JSON file per record, each written to a temporary name and
// renamed into place, so readers never see a partial file and several
// server instances may share the directory (a shared volume). Expired
// segments stay until Sweep removes them (their downloads answer
// sync.segment_expired until then, sync.not_found after).
type FileSegmentStore struct {
	dir string
}

// NewFileSegmentStore returns a store in dir, creating it if needed.
func NewFileSegmentStore(dir string) (*FileSegmentStore, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("server: segment store directory: %w", err)
	}
	return &FileSegmentStore{dir: dir}, nil
}

// validSegmentID reports whether id is "sha256:" + 64 lowercase hex digits
// (the only ids a server mints; anything else is unknown).
func validSegmentID(id string) bool {
	h, ok := strings.CutPrefix(id, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func hashHex(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (f *FileSegmentStore) partDir(partition string) string {
	return filepath.Join(f.dir, hashHex(partition)[:32])
}

func segHex(id string) string { return strings.TrimPrefix(id, "sha256:") }

func recordName(rec SegmentRecord) string {
	return segHex(rec.ID) + "." + hashHex(rec.ScopeDigest, rec.LogEpoch, strconv.FormatInt(rec.AsOfCommitSeq, 10), rec.RowCursor)[:24] + ".rec"
}

func imageName(k SegmentKey) string {
	return "img-" + hashHex(k.LogEpoch, k.Table, strconv.Itoa(int(k.SchemaVersion)), strconv.Itoa(int(k.MediaType)),
		k.ScopeDigest, strconv.FormatInt(k.AsOfCommitSeq, 10))[:40] + ".rec"
}

// writeAtomic writes data to name in dir through a temporary file.
func writeAtomic(dir, name string, r io.Reader, want int64) error {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	n, err := io.Copy(tmp, io.LimitReader(r, want+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && want >= 0 && n != want {
		err = fmt.Errorf("server: segment body is %d bytes, not %d", n, want)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

func writeJSON(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeAtomic(dir, name, strings.NewReader(string(b)), int64(len(b)))
}

// Put implements SegmentStore.
func (f *FileSegmentStore) Put(ctx context.Context, rec SegmentRecord, body io.Reader) error {
	if !validSegmentID(rec.ID) {
		return errors.New("server: FileSegmentStore.Put: malformed segment id")
	}
	dir := f.partDir(rec.Partition)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	seg := segHex(rec.ID) + ".seg"
	if _, err := os.Stat(filepath.Join(dir, seg)); errors.Is(err, fs.ErrNotExist) {
		if err := writeAtomic(dir, seg, body, rec.ByteLength); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if err := writeJSON(dir, recordName(rec), rec); err != nil {
		return err
	}
	if rec.MediaType == 2 { // sqlite: the §5.3 reuse index
		return writeJSON(dir, imageName(rec.key()), rec)
	}
	return nil
}

func readRecord(path string) (SegmentRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SegmentRecord{}, err
	}
	var rec SegmentRecord
	err = json.Unmarshal(b, &rec)
	return rec, err
}

// Find implements SegmentStore.
func (f *FileSegmentStore) Find(ctx context.Context, key SegmentKey, nowMs int64) (SegmentRecord, bool, error) {
	dir := f.partDir(key.Partition)
	rec, err := readRecord(filepath.Join(dir, imageName(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return SegmentRecord{}, false, nil
	}
	if err != nil || rec.key() != key || rec.ExpiresAtMs <= nowMs {
		return SegmentRecord{}, false, nil
	}
	if _, err := os.Stat(filepath.Join(dir, segHex(rec.ID)+".seg")); err != nil {
		return SegmentRecord{}, false, nil
	}
	return rec, true, nil
}

// Records implements SegmentStore.
func (f *FileSegmentStore) Records(ctx context.Context, partition, id string) ([]SegmentRecord, error) {
	if !validSegmentID(id) {
		return nil, nil
	}
	dir := f.partDir(partition)
	if _, err := os.Stat(filepath.Join(dir, segHex(id)+".seg")); err != nil {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, segHex(id)+".*.rec"))
	if err != nil {
		return nil, err
	}
	var out []SegmentRecord
	for _, p := range paths {
		rec, err := readRecord(p)
		if err == nil && rec.ID == id && rec.Partition == partition {
			out = append(out, rec)
		}
	}
	return out, nil
}

// Open implements SegmentStore.
func (f *FileSegmentStore) Open(ctx context.Context, partition, id string) (io.ReadCloser, error) {
	if !validSegmentID(id) {
		return nil, ErrSegmentNotFound
	}
	fh, err := os.Open(filepath.Join(f.partDir(partition), segHex(id)+".seg"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrSegmentNotFound, err)
	}
	return fh, err
}

// Sweep removes what expired before nowMs (epoch milliseconds): expired
// records, and segments left without an unexpired record. It returns the
// segments removed. Run it on a schedule from one instance.
func (f *FileSegmentStore) Sweep(ctx context.Context, nowMs int64) (int, error) {
	parts, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, p := range parts {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(f.dir, p.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			return removed, err
		}
		live := map[string]bool{} // segment hex → has an unexpired record
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".rec") {
				continue
			}
			rec, err := readRecord(filepath.Join(dir, name))
			if err != nil || rec.ExpiresAtMs <= nowMs {
				_ = os.Remove(filepath.Join(dir, name))
				continue
			}
			live[segHex(rec.ID)] = true
		}
		for _, e := range entries {
			name := e.Name()
			if h, ok := strings.CutSuffix(name, ".seg"); ok && !live[h] {
				if os.Remove(filepath.Join(dir, name)) == nil {
					removed++
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

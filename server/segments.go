package server

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	gosync "sync"

	"github.com/syncstore/syncstore/ssp2"
)

// SegmentRecord describes one stored segment as served to one scope: the
// segment's bytes are content-addressed (ID, SPEC §5.1) and one segment
// may be stored under several records — the same rows served to two
// different effective scopes, each download re-authorized against its own
// digest (§5.5).
type SegmentRecord struct {
	// ID is "sha256:" + the lowercase hex SHA-256 of the bytes.
	ID        string
	MediaType ssp2.MediaType
	// Partition and LogEpoch bind the segment to one partition's log
	// continuity (§2.1: never served across epochs).
	Partition string
	LogEpoch  string
	Table     string
	// SchemaVersion is the schema the rows are encoded for.
	SchemaVersion int32
	// ScopeDigest is the digest of the effective scopes the segment was
	// built for (§3.5).
	ScopeDigest string
	// AsOfCommitSeq is the bootstrap pin.
	AsOfCommitSeq int64
	RowCount      int64
	ByteLength    int64
	// RowCursor and NextRowCursor are a rows page's window ("" absent).
	RowCursor, NextRowCursor string
	// CreatedAtMs and ExpiresAtMs are epoch milliseconds (Config.Now);
	// a record serves downloads and reuse while now < ExpiresAtMs.
	CreatedAtMs, ExpiresAtMs int64
}

// SegmentKey is the §5.3 reuse key of a SQLite image: one stored image per
// (partition, log epoch, table, schema version, scope digest, pin), shared
// by every client bootstrapping the same scopes at the same pin.
type SegmentKey struct {
	Partition     string
	LogEpoch      string
	Table         string
	SchemaVersion int32
	MediaType     ssp2.MediaType
	ScopeDigest   string
	AsOfCommitSeq int64
}

func (r SegmentRecord) key() SegmentKey {
	return SegmentKey{Partition: r.Partition, LogEpoch: r.LogEpoch, Table: r.Table, SchemaVersion: r.SchemaVersion,
		MediaType: r.MediaType, ScopeDigest: r.ScopeDigest, AsOfCommitSeq: r.AsOfCommitSeq}
}

// SegmentStore keeps external segments (SPEC §5): rows segments too large
// to inline and SQLite images. Segments are cache entries, not durable
// state: a store may forget any segment at any time (its downloads then
// answer sync.not_found and the client re-pulls). Implementations are safe
// for concurrent use; a store shared by several server instances (a
// shared volume, an object store) lets every instance serve every
// download.
type SegmentStore interface {
	// Put stores a segment: exactly rec.ByteLength bytes read from body,
	// whose content address is rec.ID (the server computed it), under
	// rec. Putting bytes already stored adds or refreshes the record
	// without storing them twice. A store that cannot hold the segment
	// returns an error, which fails the pull (the client retries).
	Put(ctx context.Context, rec SegmentRecord, body io.Reader) error
	// Find returns a record for key whose segment is stored and
	// unexpired at nowMs (§5.3 reuse), and false when there is none.
	Find(ctx context.Context, key SegmentKey, nowMs int64) (SegmentRecord, bool, error)
	// Records returns the records of segment id in partition, expired ones
	// included (a download tells sync.segment_expired from
	// sync.not_found); none when the segment is unknown or forgotten.
	Records(ctx context.Context, partition, id string) ([]SegmentRecord, error)
	// Open returns the bytes of segment id of partition, or an error
	// wrapping ErrSegmentNotFound when they are gone.
	Open(ctx context.Context, partition, id string) (io.ReadCloser, error)
}

// ErrSegmentNotFound is returned (wrapped) by SegmentStore.Open for a
// segment the store does not hold.
var ErrSegmentNotFound = errors.New("server: segment not found")

// ErrSegmentTooLarge is returned (wrapped) by a store's Put for a segment
// larger than it can ever hold.
var ErrSegmentTooLarge = errors.New("server: segment larger than the store's bound")

// MemorySegmentStore is a SegmentStore in this process's memory, bounded
// in bytes: storing past the bound first forgets expired segments, then
// the least recently stored ones. It is the Server's default; several
// instances behind a load balancer need a shared store instead.
type MemorySegmentStore struct {
	mu      gosync.Mutex
	max     int64
	used    int64
	order   *list.List // of *memSegment, least recently stored first
	byID    map[memID]*list.Element
	byImage map[SegmentKey]memID
}

type memID struct{ partition, id string }

type memSegment struct {
	id      memID
	bytes   []byte
	records []SegmentRecord
}

// NewMemorySegmentStore returns a store holding at most maxBytes of
// segment bytes (≤ 0: DefaultMemorySegmentBytes).
func NewMemorySegmentStore(maxBytes int64) *MemorySegmentStore {
	if maxBytes <= 0 {
		maxBytes = DefaultMemorySegmentBytes
	}
	return &MemorySegmentStore{max: maxBytes, order: list.New(), byID: map[memID]*list.Element{}, byImage: map[SegmentKey]memID{}}
}

// Put implements SegmentStore.
func (m *MemorySegmentStore) Put(ctx context.Context, rec SegmentRecord, body io.Reader) error {
	if rec.ByteLength > m.max {
		return fmt.Errorf("%w: %d bytes, bound %d", ErrSegmentTooLarge, rec.ByteLength, m.max)
	}
	id := memID{rec.Partition, rec.ID}
	m.mu.Lock()
	if el, ok := m.byID[id]; ok {
		seg := el.Value.(*memSegment)
		seg.addRecord(rec)
		m.order.MoveToBack(el)
		m.index(rec)
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	b := make([]byte, rec.ByteLength)
	if _, err := io.ReadFull(body, b); err != nil {
		return fmt.Errorf("server: reading a segment to store: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byID[id]; ok { // stored meanwhile
		el.Value.(*memSegment).addRecord(rec)
		m.index(rec)
		return nil
	}
	m.evict(rec.ByteLength, rec.CreatedAtMs)
	m.byID[id] = m.order.PushBack(&memSegment{id: id, bytes: b, records: []SegmentRecord{rec}})
	m.used += rec.ByteLength
	m.index(rec)
	return nil
}

func (m *MemorySegmentStore) index(rec SegmentRecord) {
	if rec.MediaType == ssp2.MediaSQLite {
		m.byImage[rec.key()] = memID{rec.Partition, rec.ID}
	}
}

// addRecord adds rec, replacing a record of the same scope digest and
// epoch (a later expiry wins).
func (s *memSegment) addRecord(rec SegmentRecord) {
	for i, r := range s.records {
		if r.ScopeDigest == rec.ScopeDigest && r.LogEpoch == rec.LogEpoch && r.AsOfCommitSeq == rec.AsOfCommitSeq &&
			r.RowCursor == rec.RowCursor {
			if rec.ExpiresAtMs > r.ExpiresAtMs {
				s.records[i] = rec
			}
			return
		}
	}
	if len(s.records) >= maxRecordsPerSegment {
		s.records = s.records[1:]
	}
	s.records = append(s.records, rec)
}

// maxRecordsPerSegment bounds the records of one segment (distinct scopes
// served the same bytes); past it the oldest is forgotten.
const maxRecordsPerSegment = 64

// evict makes room for n bytes: expired segments first, then the least
// recently stored.
func (m *MemorySegmentStore) evict(n, nowMs int64) {
	if m.used+n <= m.max {
		return
	}
	for el := m.order.Front(); el != nil && m.used+n > m.max; {
		next := el.Next()
		seg := el.Value.(*memSegment)
		if seg.expired(nowMs) {
			m.remove(el)
		}
		el = next
	}
	for m.used+n > m.max && m.order.Len() > 0 {
		m.remove(m.order.Front())
	}
}

func (s *memSegment) expired(nowMs int64) bool {
	for _, r := range s.records {
		if r.ExpiresAtMs > nowMs {
			return false
		}
	}
	return true
}

func (m *MemorySegmentStore) remove(el *list.Element) {
	seg := el.Value.(*memSegment)
	m.order.Remove(el)
	delete(m.byID, seg.id)
	m.used -= int64(len(seg.bytes))
	for _, r := range seg.records {
		if r.MediaType == ssp2.MediaSQLite {
			if id, ok := m.byImage[r.key()]; ok && id == seg.id {
				delete(m.byImage, r.key())
			}
		}
	}
}

// Find implements SegmentStore.
func (m *MemorySegmentStore) Find(ctx context.Context, key SegmentKey, nowMs int64) (SegmentRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.byImage[key]
	if !ok {
		return SegmentRecord{}, false, nil
	}
	el, ok := m.byID[id]
	if !ok {
		return SegmentRecord{}, false, nil
	}
	for _, r := range el.Value.(*memSegment).records {
		if r.key() == key && r.ExpiresAtMs > nowMs {
			return r, true, nil
		}
	}
	return SegmentRecord{}, false, nil
}

// Records implements SegmentStore.
func (m *MemorySegmentStore) Records(ctx context.Context, partition, id string) ([]SegmentRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byID[memID{partition, id}]
	if !ok {
		return nil, nil
	}
	return append([]SegmentRecord(nil), el.Value.(*memSegment).records...), nil
}

// Open implements SegmentStore.
func (m *MemorySegmentStore) Open(ctx context.Context, partition, id string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byID[memID{partition, id}]
	if !ok {
		return nil, ErrSegmentNotFound
	}
	return io.NopCloser(bytes.NewReader(el.Value.(*memSegment).bytes)), nil
}

// Stats returns the segments held and their bytes.
func (m *MemorySegmentStore) Stats() (segments int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len(), m.used
}

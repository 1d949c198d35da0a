package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/vecindex"
)

// The vector segment: at a clean close the index (vectors, groups and its
// trained clustering) is written beside the database, and the database
// records the segment's epoch, rows and last row id. The next open maps
// the segment when all of it matches, instead of decoding every row and
// training again, and at once forgets the record: from then on the
// database is written and the file no longer matches it until the next
// clean close. A crash, a damaged or foreign file, or any mismatch means a
// load from the database, as without a segment: the database stays the
// truth and the segment is never trusted blindly.

// SegmentFile is the segment's name in the store's directory.
const SegmentFile = "vectors.seg"

// segmentKey is the meta key recording the segment written at close.
const segmentKey = "vector_segment"

// VectorSource says where an open loaded the vectors from: "segment" or
// "database", how long it took, and why not from the segment.
type VectorSource struct {
	From string        `json:"from"`
	Took time.Duration `json:"took"`
	Why  string        `json:"why,omitempty"`
	// Memory is the index's memory mode, "float32" or "int8"; Mapped says
	// the vectors are memory-mapped from the segment; SpillError is the
	// int8 mode's last failure to move vectors there (they stay in memory).
	Memory     string `json:"memory"`
	Mapped     bool   `json:"mapped"`
	SpillError string `json:"spillError,omitempty"`
}

// Vectors is where this store's vectors were loaded from at open, and how
// they are held now.
func (s *Store) Vectors() VectorSource {
	v := s.vectors
	v.Memory, v.Mapped = "float32", s.ix.Mapped()
	if s.opts.Index.Memory == vecindex.Int8 {
		v.Memory = "int8"
	}
	v.SpillError, _ = s.spillErr.Load().(string)
	return v
}

// IndexState implements engine.Describer.
func (s *Store) IndexState() engine.IndexState {
	v, st := s.Vectors(), s.ix.Stats()
	out := engine.IndexState{Kind: "exact", Rows: st.Len, Trained: st.Trained, TrainsAt: st.TrainsAt, Memory: v.Memory, Mapped: v.Mapped,
		From: v.From, Why: v.Why, VectorBytes: st.VectorBytes, IndexBytes: st.IVFBytes, SpillFailure: v.SpillError}
	if s.opts.Index.Mode == vecindex.IVF {
		out.Kind = "ivf"
	}
	if st.Trained {
		out.Lists, out.Probes, out.Codes = st.NList, st.NProbe, st.Codes.String()
	}
	return out
}

// segmentRecord is what the database says of the segment.
type segmentRecord struct {
	epoch, rows uint64
	maxSeq      int64
}

func (r segmentRecord) String() string {
	return fmt.Sprintf("%d:%d:%d", r.epoch, r.rows, r.maxSeq)
}

func parseSegmentRecord(v string) (segmentRecord, bool) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return segmentRecord{}, false
	}
	e, err1 := strconv.ParseUint(parts[0], 10, 64)
	n, err2 := strconv.ParseUint(parts[1], 10, 64)
	m, err3 := strconv.ParseInt(parts[2], 10, 64)
	return segmentRecord{e, n, m}, err1 == nil && err2 == nil && err3 == nil
}

// tableState is the memories table's row count and last row id.
func (s *Store) tableState(ctx context.Context) (uint64, int64, error) {
	var n uint64
	var maxSeq sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT count(*), max(seq) FROM memories`).Scan(&n, &maxSeq)
	return n, maxSeq.Int64, err
}

// spendSegmentRecord reads the segment's record, if any, and deletes it.
func (s *Store) spendSegmentRecord(ctx context.Context) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, segmentKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	_, err = s.db.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, segmentKey)
	return v, true, err
}

// loadSegment loads the index and the groups from the segment when it is
// the one the database recorded (v, when recorded) at its last clean close
// and matches the table. ok false says why not; err is a database failure.
func (s *Store) loadSegment(ctx context.Context, v string, recorded bool) (ok bool, why string, err error) {
	if !recorded {
		// A new store has none, which is normal; an existing one has
		// none after a run that did not close cleanly (or ran with
		// NoSegment).
		rows, _, err := s.tableState(ctx)
		if err != nil {
			return false, "", err
		}
		if rows == 0 {
			return false, "a new store: normal on a first start", nil
		}
		return false, "no segment recorded by the last run (it did not close cleanly, or ran without one)", nil
	}
	rec, valid := parseSegmentRecord(v)
	if !valid {
		return false, fmt.Sprintf("the segment record %q is damaged", v), nil
	}
	rows, maxSeq, err := s.tableState(ctx)
	if err != nil {
		return false, "", err
	}
	if rows != rec.rows || maxSeq != rec.maxSeq {
		return false, fmt.Sprintf("the database changed since the segment was written (%d rows up to %d, the segment has %d up to %d)", rows, maxSeq, rec.rows, rec.maxSeq), nil
	}
	ix, epoch, extra, why := s.openSegment()
	if ix == nil {
		return false, why, nil
	}
	if epoch != rec.epoch {
		ix.Close()
		return false, fmt.Sprintf("the segment is another close's (epoch %d, the database recorded %d)", epoch, rec.epoch), nil
	}
	if uint64(ix.Len()) != rows {
		ix.Close()
		return false, fmt.Sprintf("the segment has %d rows, the database %d", ix.Len(), rows), nil
	}
	groups := map[string]uint32{}
	if err := json.Unmarshal(extra, &groups); err != nil {
		ix.Close()
		return false, fmt.Sprintf("the segment's groups: %v", err), nil
	}
	s.ix, s.groups, s.segment = ix, groups, rec
	return true, "", nil
}

// openSegment opens (maps) the segment file, or says why it cannot.
func (s *Store) openSegment() (*vecindex.Index, uint64, []byte, string) {
	f, err := os.Open(filepath.Join(s.dir, SegmentFile))
	if err != nil {
		return nil, 0, nil, fmt.Sprintf("segment: %v", err)
	}
	defer f.Close()
	ix, epoch, extra, err := vecindex.OpenSegment(f, s.dim, s.opts.Index)
	if err != nil {
		return nil, 0, nil, err.Error()
	}
	return ix, epoch, extra, ""
}

// spill moves the vectors in memory out of the heap (the int8 mode's
// promise): it writes the index to the segment file and maps the file's
// vectors in their place. The database does not record this segment, so
// a crash before the next clean close still means a load from the
// database. Writers are held by the caller.
func (s *Store) spill(ctx context.Context) error {
	version := s.ix.Version()
	rec, err := s.writeSegment(ctx)
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(s.dir, SegmentFile))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := s.ix.MapVectors(f, version); err != nil {
		return err
	}
	s.segment, s.segVersion, s.segTrained = rec, version, s.ix.Trained()
	s.spillErr.Store("")
	return nil
}

// spillDue is when the int8 mode spills again while running: once the
// writes since the last mapping reach an eighth of the rows (and at
// least spillMin), the rows they hold in memory go to the segment too.
func (s *Store) spillDue() bool {
	u := s.ix.Unmapped()
	return u > 0 && u >= s.spillMin && u >= s.ix.Len()/8
}

const (
	spillMin   = 16384
	spillEvery = 10 * time.Second
)

// spiller checks every spillEvery whether a spill is due, until Close.
func (s *Store) spiller() {
	t := time.NewTicker(spillEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.maybeSpill()
	}
}

// maybeSpill spills when it is due; a failure is kept for doctor.
func (s *Store) maybeSpill() {
	if !s.spillDue() {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.closed.Load() && s.spillDue() {
		if err := s.spill(context.Background()); err != nil {
			s.spillErr.Store(err.Error())
		}
	}
}

// saveSegment writes the index to the segment (a temporary file renamed
// over the old one) and records it in the database. Writers
// are held by the caller.
func (s *Store) saveSegment(ctx context.Context) error {
	if s.segment.epoch != 0 && s.ix.Version() == s.segVersion && s.ix.Trained() == s.segTrained {
		// Unchanged since it was read (a command that only looked): the
		// file is still this index's.
		if rows, maxSeq, err := s.tableState(ctx); err == nil && rows == s.segment.rows && maxSeq == s.segment.maxSeq {
			if _, err := os.Stat(filepath.Join(s.dir, SegmentFile)); err == nil {
				return s.record(ctx, s.segment)
			}
		}
	}
	rec, err := s.writeSegment(ctx)
	if err != nil {
		return err
	}
	return s.record(ctx, rec)
}

// writeSegment writes the index to the segment file (a temporary file
// renamed over the old one) under a new epoch.
func (s *Store) writeSegment(ctx context.Context) (segmentRecord, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return segmentRecord{}, err
	}
	rows, maxSeq, err := s.tableState(ctx)
	if err != nil {
		return segmentRecord{}, err
	}
	if uint64(s.ix.Len()) != rows {
		return segmentRecord{}, fmt.Errorf("the index has %d rows, the table %d", s.ix.Len(), rows)
	}
	s.gmu.RLock()
	extra, err := json.Marshal(s.groups)
	s.gmu.RUnlock()
	if err != nil {
		return segmentRecord{}, err
	}
	rec := segmentRecord{epoch: binary.LittleEndian.Uint64(b[:]), rows: rows, maxSeq: maxSeq}
	path := filepath.Join(s.dir, SegmentFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return segmentRecord{}, err
	}
	// Not synced: the database is, and the record is written after the
	// rename. A segment that power loss leaves torn or empty fails its
	// checksum, and the open loads from the database.
	err = s.ix.WriteSegment(f, rec.epoch, extra)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return segmentRecord{}, err
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return rec, nil
}

// record notes the segment rec in the database.
func (s *Store) record(ctx context.Context, rec segmentRecord) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, segmentKey, rec.String())
	return err
}

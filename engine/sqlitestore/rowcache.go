package sqlitestore

import (
	"bytes"
	"sync"

	"github.com/clawmem/clawmem/schemas"
)

// rowCacheRows bounds the rows a store keeps decoded: at a few hundred
// bytes each, some 10 MB when full.
const rowCacheRows = 16384

// rowCache keeps the rows searches read, by seq, so that the memories a
// store's recalls keep finding are read from SQLite once: reading and
// decoding them was a sixth of a recall's CPU at 100,000 memories.
//
// A row served from here is the row as the last finished write left it.
// Every write brackets its commit and its index changes with begin and
// end, and drops each row it changed (indexPut, indexUpdate and unindex,
// which every write calls after its commit). Meanwhile every read goes to
// the database, and no read keeps what it read if a write began or ended
// since it looked here: it may have seen a row before that write. So no
// reader sees a row go back to an older version.
//
// Rows are kept without their vectors, which every read takes from the
// index.
type rowCache struct {
	mu       sync.Mutex
	rows     map[int64]schemas.Memory
	writes   uint64 // begins, ends and drops so far
	inFlight int    // writes begun and not ended
	// asked and hits count the rows get was asked for and answered.
	asked, hits uint64
}

// RowCacheStats says how many rows searches asked the row cache for, and
// how many of them it held.
func (s *Store) RowCacheStats() (asked, hits uint64) {
	s.rows.mu.Lock()
	defer s.rows.mu.Unlock()
	return s.rows.asked, s.rows.hits
}

// begin says a write is about to commit; end, that it has committed (or
// failed) and changed the indexes.
func (c *rowCache) begin() { c.step(1) }
func (c *rowCache) end()   { c.step(-1) }

func (c *rowCache) step(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight += d
	c.writes++
}

// get moves the rows of seqs it holds into found and returns the others,
// and how many writes had begun, ended or dropped rows.
func (c *rowCache) get(seqs []int64, found map[int64]schemas.Memory) (missing []int64, writes uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked += uint64(len(seqs))
	if c.inFlight > 0 {
		return seqs, c.writes
	}
	for _, seq := range seqs {
		m, ok := c.rows[seq]
		if !ok {
			missing = append(missing, seq)
			continue
		}
		// The bytes are the caller's to keep: no two callers share them.
		m.Metadata = bytes.Clone(m.Metadata)
		found[seq] = m
		c.hits++
	}
	return missing, c.writes
}

// keep holds the rows read, unless a write began, ended or dropped a row
// since get returned writes, or is under way.
func (c *rowCache) keep(writes uint64, read map[int64]schemas.Memory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if writes != c.writes || c.inFlight > 0 {
		return
	}
	if c.rows == nil {
		c.rows = make(map[int64]schemas.Memory, len(read))
	}
	for seq, m := range read {
		if _, ok := c.rows[seq]; ok {
			continue
		}
		// Full: an arbitrary row makes room (a map's iteration starts
		// anywhere).
		for old := range c.rows {
			if len(c.rows) < rowCacheRows {
				break
			}
			delete(c.rows, old)
		}
		m.Vector = nil
		m.Metadata = bytes.Clone(m.Metadata)
		c.rows[seq] = m
	}
}

// drop forgets row seq, which a write has changed or removed.
func (c *rowCache) drop(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	delete(c.rows, seq)
}

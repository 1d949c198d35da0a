package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// defaultLimit is the result count of a search that names none, as in the
// seed's tools.
const defaultLimit = 5

// VectorSearch implements engine.Store.
func (s *Store) VectorSearch(ctx context.Context, vec []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	found, err := s.vectorHits(vec, o)
	if err != nil || len(found.seqs) == 0 {
		return nil, err
	}
	rows, err := s.readRows(ctx, found.seqs)
	if err != nil {
		return nil, err
	}
	return found.results(rows, o), nil
}

// hits are a search's rows, best first, and their scores (normalised and
// raw) before the rows are read.
type hits struct {
	seqs  []int64
	score func(seq int64) (float64, float64)
}

// results are the hits whose rows were read and that o still allows, in
// order.
func (h hits) results(rows map[int64]schemas.Memory, o engine.SearchOptions) []engine.SearchResult {
	if len(h.seqs) == 0 {
		return nil
	}
	out := make([]engine.SearchResult, 0, len(h.seqs))
	for _, seq := range h.seqs {
		m, ok := rows[seq]
		if !ok || !allowed(m, o) {
			continue
		}
		sc, raw := h.score(seq)
		out = append(out, engine.SearchResult{Memory: m, Score: sc, Raw: raw})
	}
	return out
}

// vectorHits ranks the rows nearest vec that o allows.
func (s *Store) vectorHits(vec []float32, o engine.SearchOptions) (hits, error) {
	if len(vec) != s.dim {
		return hits{}, fmt.Errorf("%w: query vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(vec), s.dim)
	}
	if err := schemas.ValidateVector(vec); err != nil {
		return hits{}, err
	}
	groups, ok := s.allowedGroups(o.Scopes, o.History)
	if !ok {
		return hits{}, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	// A minimum vector score is a minimum cosine, which the index uses to
	// skip hopeless candidates; a hair below it, so rounding never drops a
	// hit the score check keeps.
	minSim := float32(math.Inf(-1))
	if o.MinScore > 0 {
		minSim = float32(engine.CosineForScore(o.MinScore)) - 1e-5
	}
	found := s.ix.SearchAbove(vec, o.Limit, groups, o.Probes, minSim)
	seqs := make([]int64, 0, len(found))
	sims := make(map[int64]float64, len(found))
	for _, h := range found {
		if engine.VectorScore(float64(h.Sim)) < o.MinScore {
			continue
		}
		seqs = append(seqs, h.Key)
		sims[h.Key] = float64(h.Sim)
	}
	return hits{seqs, func(seq int64) (float64, float64) { return engine.VectorScore(sims[seq]), sims[seq] }}, nil
}

// RankHybrid implements engine.RankedSearcher: HybridSearch's ranking,
// with each hit's state from its index group.
func (s *Store) RankHybrid(ctx context.Context, vec []float32, query string, o engine.SearchOptions) (byVector, byText []engine.Ranked, ok bool, err error) {
	if err := s.check(); err != nil {
		return nil, nil, false, err
	}
	textHits, direct := s.memoryText(query, o)
	if !direct {
		return nil, nil, false, nil
	}
	var (
		text hits
		wg   sync.WaitGroup
	)
	wg.Go(func() { text = textHits() })
	found, err := s.vectorHits(vec, o)
	wg.Wait()
	if err != nil {
		return nil, nil, false, err
	}
	current, _ := s.allowedGroups(engine.AllScopes(), false)
	return s.ranked(found, current), s.ranked(text, current), true, nil
}

// ranked are h's hits with their state; current holds the groups of
// memories that hold.
func (s *Store) ranked(h hits, current *vecindex.Groups) []engine.Ranked {
	if len(h.seqs) == 0 {
		return nil
	}
	out := make([]engine.Ranked, len(h.seqs))
	for i, seq := range h.seqs {
		g, ok := s.ix.Group(seq)
		sc, raw := h.score(seq)
		out[i] = engine.Ranked{Key: seq, Score: sc, Raw: raw, Current: ok && current.Has(g)}
	}
	return out
}

// ReadRanked implements engine.RankedSearcher.
func (s *Store) ReadRanked(ctx context.Context, keys []int64, o engine.SearchOptions) (map[int64]schemas.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.readRows(ctx, keys)
	if err != nil {
		return nil, err
	}
	for seq, m := range rows {
		if !allowed(m, o) {
			delete(rows, seq)
		}
	}
	return rows, nil
}

// allowed reports whether a search under o may answer m.
func allowed(m schemas.Memory, o engine.SearchOptions) bool {
	return o.Scopes.Allows(m.Scope) && (o.History || m.Current())
}

// HybridSearch implements engine.HybridSearcher. Ranked by the in-memory
// indexes, the two searches' rows are read in one statement, once each:
// a recall's two lists share many of their memories. Where full-text
// search goes to FTS5 (phrase terms, the int8 memory mode, a large
// store's first seconds), it runs as TextSearch does, beside.
func (s *Store) HybridSearch(ctx context.Context, vec []float32, query string, o engine.SearchOptions) (byVector, byText []engine.SearchResult, err error) {
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	var (
		text hits
		wg   sync.WaitGroup
	)
	textHits, direct := s.memoryText(query, o)
	if direct {
		wg.Go(func() { text = textHits() })
	} else {
		wg.Go(func() { byText, err = s.TextSearch(ctx, query, o) })
	}
	found, verr := s.vectorHits(vec, o)
	wg.Wait()
	if verr != nil {
		return nil, nil, verr
	}
	if err != nil {
		return nil, nil, err
	}
	seqs := found.seqs
	if direct {
		seqs = append(slices.Clip(seqs), text.seqs...)
	}
	if len(seqs) == 0 {
		return nil, byText, nil
	}
	rows, err := s.readRows(ctx, seqs)
	if err != nil {
		return nil, nil, err
	}
	if direct {
		byText = text.results(rows, o)
	}
	return found.results(rows, o), byText, nil
}

// searchRows reads the memories a search found: the row without its
// vector blob (q selects listColumns), the vector from the index. A
// search reads tens of rows, and the blob was most of each (1.5 KB at 384
// dimensions; at 1,024 it is 4 KB in overflow pages). The index holds the
// vector normalised, which is all a search's cosines need; callers that
// return vectors (export, show) read them from the table.
//
// q is one of a few fixed statements, prepared once: parsing the SQL anew
// for each of a recall's row reads (two fetches, three hits' neighbours)
// was a tenth of its CPU.
func (s *Store) searchRows(ctx context.Context, what, q string, each func(int64, schemas.Memory), args ...any) error {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		seq, m, err := scanMemory(rows)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		m.Vector, _ = s.ix.Vector(seq)
		each(seq, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

const fetchRows = `SELECT ` + listColumns + ` FROM memories WHERE seq IN (SELECT value FROM json_each(?))`

// prepared returns the statement for q, prepared on first use and kept
// until the store closes. q must be one of a fixed few (no values in it).
func (s *Store) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.stmts.Store(q, st)
	return st, nil
}

// fetch loads the rows seqs in that order, dropping any the options do not
// allow (a second check behind the index's own: scope, history) or that
// vanished meanwhile.
func (s *Store) fetch(ctx context.Context, seqs []int64, o engine.SearchOptions, score func(int64) (float64, float64)) ([]engine.SearchResult, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	rows, err := s.readRows(ctx, seqs)
	if err != nil {
		return nil, err
	}
	return hits{seqs, score}.results(rows, o), nil
}

// readRows reads the rows of seqs (listColumns, the vector from the
// index), by seq, from the row cache or else the database; a row deleted
// since is missing.
func (s *Store) readRows(ctx context.Context, seqs []int64) (map[int64]schemas.Memory, error) {
	found := make(map[int64]schemas.Memory, len(seqs))
	seqs, writes := s.rows.get(seqs, found)
	for seq, m := range found {
		m.Vector, _ = s.ix.Vector(seq)
		found[seq] = m
	}
	if len(seqs) == 0 {
		return found, nil
	}
	// The row numbers go as one JSON array, so one prepared statement
	// serves every count.
	list := make([]byte, 0, 8*len(seqs))
	for i, seq := range seqs {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, seq, 10)
	}
	read := make(map[int64]schemas.Memory, len(seqs))
	err := s.searchRows(ctx, "fetch results", fetchRows,
		func(seq int64, m schemas.Memory) { read[seq] = m }, "["+string(list)+"]")
	if err != nil {
		return nil, err
	}
	s.rows.keep(writes, read)
	for seq, m := range read {
		found[seq] = m
	}
	return found, nil
}

// TextSearch implements engine.Store.
func (s *Store) TextSearch(ctx context.Context, query string, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if !s.fts || o.Scopes.Denies() {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	if textHits, ok := s.memoryText(query, o); ok {
		found := textHits()
		return s.fetch(ctx, found.seqs, o, found.score)
	}
	terms, err := s.selectiveTerms(ctx, fts.QueryTerms(query))
	if err != nil {
		return nil, err
	}
	match := fts.MatchTerms(terms)
	if match == "" {
		return nil, nil
	}
	if out, exact, err := s.textSearchByIndex(ctx, match, o); err != nil || exact {
		return out, err
	}
	cond, args := scopeClause("m.scope", o.Scopes)
	if !o.History {
		cond += " AND m.invalidated_at = 0"
	}
	// FTS5's bm25() is lower-is-better; its negation is the usual raw score.
	// The ranking selects row numbers and scores only: every match is
	// scored and sorted, and a sorter row holding the memory's columns
	// (its text, metadata and vector) cost more than the scoring. The few
	// rows ranked are read afterwards.
	q := `SELECT m.seq, -bm25(memories_fts) FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ? AND ` + cond + ` ORDER BY bm25(memories_fts) LIMIT ?`
	ranked, err := s.rankText(ctx, q, append(append([]any{match}, args...), o.Limit)...)
	if err != nil {
		return nil, err
	}
	return s.fetchRanked(ctx, ranked, o)
}

// rankedRow is a full-text match: its row and raw BM25 score.
type rankedRow struct {
	seq int64
	raw float64
}

// rankText runs a ranking query of (seq, raw score) rows, best first.
func (s *Store) rankText(ctx context.Context, q string, args ...any) ([]rankedRow, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("full-text search: %w", err)
	}
	defer rows.Close()
	var ranked []rankedRow
	for rows.Next() {
		var r rankedRow
		if err := rows.Scan(&r.seq, &r.raw); err != nil {
			return nil, fmt.Errorf("full-text search: %w", err)
		}
		ranked = append(ranked, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("full-text search: %w", err)
	}
	return ranked, nil
}

// fetchRanked reads the ranked rows that reach o.MinScore and the options
// allow, best first.
func (s *Store) fetchRanked(ctx context.Context, ranked []rankedRow, o engine.SearchOptions) ([]engine.SearchResult, error) {
	found := rankedHits(ranked, o)
	return s.fetch(ctx, found.seqs, o, found.score)
}

// rankedHits are the ranked rows that reach o.MinScore, best first.
func rankedHits(ranked []rankedRow, o engine.SearchOptions) hits {
	seqs := make([]int64, 0, len(ranked))
	raws := make(map[int64]float64, len(ranked))
	for _, r := range ranked {
		if engine.NormalizeBM25(r.raw) < o.MinScore {
			break // best first: the rest score lower
		}
		seqs = append(seqs, r.seq)
		raws[r.seq] = r.raw
	}
	return hits{seqs, func(seq int64) (float64, float64) { return engine.NormalizeBM25(raws[seq]), raws[seq] }}
}

// textOverfetch is how many times o.Limit matches the index-filtered
// search ranks before it filters them by scope.
const textOverfetch = 4

// textSearchByIndex ranks the full-text matches without joining the
// memories table: the top textOverfetch × o.Limit of all matches, kept
// where the vector index says their scope and state are allowed, then
// read. The join read a memory row for every match, the larger part of a
// search's cost. The answer is exact when it has o.Limit rows or the
// ranking ran out of matches: every match beyond the ones ranked scores
// lower. Otherwise (a caller whose scopes hold few of the matches) exact
// is false and the caller ranks with the join.
func (s *Store) textSearchByIndex(ctx context.Context, match string, o engine.SearchOptions) (out []engine.SearchResult, exact bool, err error) {
	groups, ok := s.allowedGroups(o.Scopes, o.History)
	if !ok {
		return nil, false, nil // the index knows none of these scopes: the join decides
	}
	k := textOverfetch * o.Limit
	ranked, err := s.rankText(ctx, `SELECT rowid, -bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?
		ORDER BY bm25(memories_fts) LIMIT ?`, match, k)
	if err != nil {
		return nil, false, err
	}
	// A row the index does not hold goes on to fetch, which checks it.
	kept := make([]rankedRow, 0, len(ranked))
	for _, r := range ranked {
		if g, ok := s.ix.Group(r.seq); !ok || groups.Has(g) {
			kept = append(kept, r)
		}
	}
	out, err = s.fetchRanked(ctx, kept, o)
	if err != nil {
		return nil, false, err
	}
	lowest := len(ranked) > 0 && engine.NormalizeBM25(ranked[len(ranked)-1].raw) < o.MinScore
	if len(out) >= o.Limit || len(ranked) < k || lowest {
		return out[:min(len(out), o.Limit)], true, nil
	}
	return nil, false, nil
}

// Terms found in more than maxDocShare of all memories (and in more than
// minCommonDocs) are left out of BM25 queries. Their IDF is near zero, so
// they barely move the ranking, but FTS5 scores every row holding any query
// term: "the" alone would make a query cost a scan of the whole store.
const (
	maxDocShare   = 0.02
	minCommonDocs = 2000
)

// commonDocs is how many of n memories a term may be in and still be
// searched for.
func commonDocs(n int) int { return max(minCommonDocs, int(maxDocShare*float64(n))) }

// selectiveTerms drops terms too common to be worth their cost, keeping
// terms the vocabulary does not know (phrases, diacritics) as they are.
func (s *Store) selectiveTerms(ctx context.Context, terms []string) ([]string, error) {
	limit := commonDocs(s.ix.Len())
	if s.ix.Len() <= limit {
		return terms, nil
	}
	out := terms[:0:0]
	for _, t := range terms {
		docs, err := s.docFreq(ctx, t)
		if err != nil {
			return nil, err
		}
		if docs <= limit {
			out = append(out, t)
		}
	}
	return out, nil
}

// dfCacheSize bounds the document-frequency cache.
const dfCacheSize = 10000

type dfEntry struct {
	docs, atLen int
}

// docFreq is how many memories hold term (0 when the vocabulary does not
// know it). Counting reads the term's whole posting list, so answers are
// cached until the store's size moves by 5%: frequencies drift slowly.
func (s *Store) docFreq(ctx context.Context, term string) (int, error) {
	n := s.ix.Len()
	s.dfMu.Lock()
	e, ok := s.df[term]
	s.dfMu.Unlock()
	if ok && math.Abs(float64(n-e.atLen)) <= 0.05*float64(n) {
		return e.docs, nil
	}
	var docs int
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM memories_fts_vocab WHERE term = ?`, term).Scan(&docs)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("full-text vocabulary: %w", err)
	}
	s.dfMu.Lock()
	if len(s.df) >= dfCacheSize {
		clear(s.df)
	}
	s.df[term] = dfEntry{docs: docs, atLen: n}
	s.dfMu.Unlock()
	return docs, nil
}

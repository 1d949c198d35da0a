package retrieve

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
)

// Names are the proper names a text gives: runs of capitalised words
// ("Femke", "Trattoria Da Cosimo", "Project Heron") that do not begin a
// sentence, where any word may be capitalised. A speaker label at the
// start ("Liesel: …") is not a name the text gives; stop words and a lone
// "I" are not names. German capitalises every noun, so a name there may be
// a common noun: the stage that uses names bounds what each one brings in.
func Names(text string) []string {
	if i := strings.IndexByte(text, ':'); i > 0 && i <= 40 && !strings.ContainsAny(text[:i], ".!?\n") {
		text = text[i+1:]
	}
	var (
		names []string
		run   []string
		start = true // the next word begins a sentence
	)
	flush := func() {
		if len(run) > 0 {
			name := strings.Join(run, " ")
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		run = run[:0]
	}
	for _, field := range strings.Fields(text) {
		word := strings.TrimFunc(field, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if word == "" {
			flush()
			continue
		}
		// A sentence's first word is capitalised whatever it is; it
		// counts only as a possessive ("Femke's brother").
		first, _ := utf8.DecodeRuneInString(word)
		possessive := strings.HasSuffix(word, "'s") || strings.HasSuffix(word, "’s")
		if possessive {
			word = word[:strings.LastIndexAny(word, "'’")]
		}
		if (start && !possessive) || !unicode.IsUpper(first) || word == "I" || fts.IsStopWord(strings.ToLower(word)) {
			flush()
		} else {
			run = append(run, word)
		}
		// Punctuation after a word ends the name; a full stop, question
		// or exclamation mark also makes the next word a sentence start.
		last, _ := utf8.DecodeLastRuneInString(field)
		start = strings.ContainsRune(".!?", last)
		if possessive || !unicode.IsLetter(last) && !unicode.IsDigit(last) {
			flush()
		}
	}
	flush()
	return names
}

// maxNamesPerQuery bounds the entity stage's extra searches per recall.
const maxNamesPerQuery = 6

// namePool is how many memories naming one name the stage weighs.
const namePool = 8

// entities brings in, for each name the cfg.EntityHits best candidates
// give that the query does not ("Who showed the cat-sitter how to
// medicate Pim, and how is that person related to Liesel?" finds "Anouk
// showed her how to give his pills"; "Anouk" then finds "Anouk is still
// my boss"), the memory naming it that is closest to the query, scored
// cfg.EntityFactor × the hit's score, or lifts it to that score when it is
// a candidate already. Evidence for a question often sits in memories
// that share no word with it but a name with one that does.
func (r *Retriever) entities(ctx context.Context, cs []Candidate, q Query, text string) []Candidate {
	if r.cfg.EntityHits <= 0 || q.Direct || len(cs) == 0 || !r.store.HasFullText() {
		return cs
	}
	asked := map[string]bool{}
	for _, t := range fts.Terms(text) {
		asked[t] = true
	}
	at := positions(cs)
	tried := map[string]bool{}
	hits := slices.Clone(cs[:min(r.cfg.EntityHits, len(cs))])
	for _, hit := range hits {
		for _, name := range Names(hit.Memory.Text) {
			key := strings.ToLower(name)
			if tried[key] || len(tried) >= maxNamesPerQuery || namedIn(asked, name) {
				continue
			}
			tried[key] = true
			rs, err := r.store.TextSearch(ctx, name, engine.SearchOptions{Scopes: q.Scopes, Limit: namePool})
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("name lookup failed", "err", err)
				}
				continue
			}
			best, bestCos := -1, -2.0
			for i, res := range rs {
				m := res.Memory
				if m.ID == hit.Memory.ID || !m.Current() || (q.Category != "" && m.Category != q.Category) || !mentions(m.Text, key) {
					continue
				}
				if c := cosine(q.Vector, m.Vector); c > bestCos {
					best, bestCos = i, c
				}
			}
			if best < 0 {
				continue
			}
			m := rs[best].Memory
			score := hit.Score * r.cfg.EntityFactor
			if j, ok := at[m.ID]; ok {
				if cs[j].Score < score {
					cs[j].Score, cs[j].Sources.Entity = score, name
				}
				continue
			}
			at[m.ID] = len(cs)
			cs = append(cs, Candidate{Memory: m, Score: score,
				Sources: Sources{Cosine: bestCos, Rerank: hit.Sources.Rerank, Entity: name}})
		}
	}
	sortByScore(cs)
	return cs
}

// namedIn reports whether every word of name is among the query's terms.
func namedIn(asked map[string]bool, name string) bool {
	for _, t := range fts.Terms(name) {
		if !asked[t] {
			return false
		}
	}
	return true
}

// mentions reports whether text gives the (lower-cased) name, not merely
// shares a word of it with BM25's stemming.
func mentions(text, name string) bool {
	return strings.Contains(strings.ToLower(text), name)
}

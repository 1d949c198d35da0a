// Package fts prepares text for a word-based full-text index and turns user
// queries into safe full-text queries. Languages written without spaces
// (Chinese, Japanese, Korean) are indexed as overlapping character bigrams
// plus single characters, so "乌龙茶" finds "我最喜欢喝乌龙茶" even though
// no tokenizer could know where those words begin and end.
package fts

import (
	"strings"
	"unicode"
)

// MaxQueryTerms bounds how many terms a query expands to, so a 100 KB query
// costs no more than a long sentence.
const MaxQueryTerms = 64

// IsCJK reports whether r belongs to a script written without spaces
// between words (Han, Hiragana, Katakana with its prolonged-sound marks,
// Hangul).
func IsCJK(r rune) bool {
	return r == 'ー' || r == 'ｰ' || unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// IndexText rewrites text into the form stored in the index: runs of CJK
// characters become space-separated unigrams and bigrams; everything else is
// kept for the index's own tokenizer. Invalid UTF-8 is replaced, not dropped.
func IndexText(text string) string {
	var b strings.Builder
	b.Grow(len(text) * 2)
	var run []rune
	flush := func() {
		if len(run) == 0 {
			return
		}
		for i, r := range run {
			b.WriteByte(' ')
			b.WriteRune(r)
			if i+1 < len(run) {
				b.WriteByte(' ')
				b.WriteRune(r)
				b.WriteRune(run[i+1])
			}
		}
		b.WriteByte(' ')
		run = run[:0]
	}
	for _, r := range strings.ToValidUTF8(text, "\uFFFD") {
		if IsCJK(r) {
			run = append(run, r)
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String()
}

// Terms splits a query into the terms it is matched by: lower-cased words
// of letters and digits, and for CJK runs their bigrams (a lone CJK
// character stays a unigram). Duplicates are dropped and at most
// MaxQueryTerms are returned. Query syntax (quotes, *, NEAR, parentheses)
// carries no meaning here: it is punctuation.
func Terms(query string) []string {
	query = strings.ToValidUTF8(query, " ")
	seen := make(map[string]bool)
	var terms []string
	add := func(t string) bool {
		if t == "" || seen[t] {
			return len(terms) < MaxQueryTerms
		}
		seen[t] = true
		terms = append(terms, t)
		return len(terms) < MaxQueryTerms
	}
	var word strings.Builder
	var run []rune
	flushWord := func() bool {
		w := strings.Trim(strings.ToLower(word.String()), connectors)
		word.Reset()
		return add(w)
	}
	flushRun := func() bool {
		defer func() { run = run[:0] }()
		if len(run) == 1 {
			return add(string(run))
		}
		for i := 0; i+1 < len(run); i++ {
			if !add(string(run[i : i+2])) {
				return false
			}
		}
		return true
	}
	for _, r := range query {
		switch {
		case IsCJK(r):
			if !flushWord() {
				return terms
			}
			run = append(run, r)
		case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r) ||
			(word.Len() > 0 && strings.ContainsRune(connectors, r)):
			if !flushRun() {
				return terms
			}
			word.WriteRune(r)
		default:
			if !flushWord() || !flushRun() {
				return terms
			}
		}
	}
	if flushWord() {
		flushRun()
	}
	return terms
}

// connectors join the parts of identifiers such as JINA_API_KEY or
// text-embedding-3-small: kept inside a term, they make it a phrase, so the
// parts must stand together in a match.
const connectors = "_-."

// MatchQuery builds an FTS5 MATCH expression that ORs the query's terms,
// each a quoted string so nothing in it is read as syntax. It returns ""
// when the query has no searchable term.
func MatchQuery(query string) string { return MatchTerms(Terms(query)) }

// MatchTerms builds the MATCH expression for terms from Terms.
func MatchTerms(terms []string) string {
	if len(terms) == 0 {
		return ""
	}
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

package lancestore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// LanceDB takes filters as SQL text, with no bound parameters. Every
// string a filter or an update carries goes through escapeSQL.

// escapeSQL is the body of a single-quoted SQL literal holding s: each '
// doubled. It refuses a backslash, a NUL byte and invalid UTF-8 rather
// than guess: whether a backslash escapes the next character depends on
// the SQL dialect a LanceDB version parses with, and the FFI passes C
// strings, which end at NUL — either could end a literal early. No value
// clawmem puts in SQL (ids, id prefixes, scopes, categories) can hold them.
func escapeSQL(s string) (string, error) {
	if strings.ContainsAny(s, "\\\x00") || !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %q cannot be used in a LanceDB filter", schemas.ErrInvalid, s)
	}
	return strings.ReplaceAll(s, "'", "''"), nil
}

// literal is s as a single-quoted SQL string literal.
func literal(s string) (string, error) {
	body, err := escapeSQL(s)
	if err != nil {
		return "", err
	}
	return "'" + body + "'", nil
}

// and joins conditions, each parenthesised; empty ones (no restriction)
// are left out, so no condition at all is "".
func and(conds ...string) string {
	var parts []string
	for _, c := range conds {
		if c != "" {
			parts = append(parts, "("+c+")")
		}
	}
	return strings.Join(parts, " AND ")
}

// idIs matches the row with this id.
func idIs(id string) (string, error) {
	l, err := literal(id)
	if err != nil {
		return "", err
	}
	return "id = " + l, nil
}

// idIn matches the rows with these ids; it needs at least one.
func idIn(ids []string) (string, error) {
	ls := make([]string, len(ids))
	for i, id := range ids {
		l, err := literal(id)
		if err != nil {
			return "", err
		}
		ls[i] = l
	}
	return "id IN (" + strings.Join(ls, ", ") + ")", nil
}

// idPrefix matches ids starting with prefix. LIKE's wildcards are refused
// here, since escapeSQL knows nothing of them; a validated prefix (hex and
// dashes) holds none.
func idPrefix(prefix string) (string, error) {
	if strings.ContainsAny(prefix, "%_") {
		return "", fmt.Errorf("%w: id prefix %q", schemas.ErrInvalid, prefix)
	}
	l, err := literal(prefix + "%")
	if err != nil {
		return "", err
	}
	return "id LIKE " + l, nil
}

// scopeCond renders f as a condition on the scope column; ok is false when
// f matches nothing, and an unrestricted filter is "" (no condition). A
// name that is not a valid scope is dropped: no memory can be stored under
// it. A filter allowing global also matches rows without a scope (NULL or
// the empty string), as the plugins' older rows are.
func scopeCond(f engine.ScopeFilter) (cond string, ok bool) {
	if f.All() {
		return "", true
	}
	var ls []string
	global := false
	for _, sc := range f.Scopes() {
		if schemas.ValidateScope(sc) != nil {
			continue
		}
		l, err := literal(sc)
		if err != nil {
			continue
		}
		ls = append(ls, l)
		global = global || sc == schemas.GlobalScope
	}
	if len(ls) == 0 {
		return "", false
	}
	cond = "scope IN (" + strings.Join(ls, ", ") + ")"
	if global {
		cond += " OR scope IS NULL OR scope = ''"
	}
	return cond, true
}

// maxExactMillis bounds timestamps in filters: a float64 column (the
// plugin's JavaScript numbers) holds whole milliseconds exactly up to 2^53,
// some 285,000 years from now.
const maxExactMillis = 1 << 53

// timeLiteral renders epoch ms for a comparison with the time column, as a
// float when the column holds floats so that no cast is left to guess.
func timeLiteral(ms int64, float bool) string {
	ms = min(max(ms, -maxExactMillis), maxExactMillis)
	s := strconv.FormatInt(ms, 10)
	if float {
		s += ".0"
	}
	return s
}

// bulkCond renders f as a condition; ok is false when f matches nothing.
func bulkCond(f engine.BulkFilter, floatTime bool) (cond string, ok bool, err error) {
	if f.Scopes.All() && f.Before <= 0 {
		return "", false, engine.ErrUnfilteredBulk
	}
	sc, ok := scopeCond(f.Scopes)
	if !ok {
		return "", false, nil
	}
	var before string
	if f.Before > 0 {
		before = "timestamp < " + timeLiteral(f.Before, floatTime)
	}
	return and(sc, before), true, nil
}

// listCond renders the filters of o as a condition; ok is false when they
// match nothing.
func listCond(o engine.ListOptions) (cond string, ok bool, err error) {
	sc, ok := scopeCond(o.Scopes)
	if !ok {
		return "", false, nil
	}
	var cat string
	if o.Category != "" {
		if !o.Category.Valid() {
			return "", false, fmt.Errorf("%w: category %q", schemas.ErrInvalid, o.Category)
		}
		l, err := literal(string(o.Category))
		if err != nil {
			return "", false, err
		}
		cat = "category = " + l
	}
	return and(sc, cat), true, nil
}

// floatValue is v as lancedb-go's Update passes it on: the JSON number is
// spliced into SQL as written, so it always carries a decimal point and
// reads as a float whatever the column.
func floatValue(v float64) json.Number {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return json.Number(s)
}

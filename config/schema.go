package config

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
)

// kind is what a config key holds.
type kind int

const (
	kindObject kind = iota // a struct: a fixed set of keys
	kindMap                // free keys (scope names, agent ids), one value type
	kindList
	kindString
	kindInt
	kindFloat
	kindBool
)

// node is one key of the schema, derived from the Config struct tree so the
// accepted keys can never drift from the decoded ones.
type node struct {
	kind   kind
	fields map[string]*node // kindObject
	elem   *node            // kindMap, kindList
	// fromString lets an integer be written as a string, for the seed's
	// `"dimensions": "${EMBED_DIMS}"` (its parsePositiveInt accepts both).
	fromString bool
}

var schema = func() *node {
	n := schemaOf(reflect.TypeFor[Config]())
	n.fields["embedding"].fields["dimensions"].fromString = true
	return n
}()

func schemaOf(t reflect.Type) *node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		n := &node{kind: kindObject, fields: map[string]*node{}}
		addFields(n, t)
		return n
	case reflect.Map:
		return &node{kind: kindMap, elem: schemaOf(t.Elem())}
	case reflect.Slice:
		return &node{kind: kindList, elem: schemaOf(t.Elem())}
	case reflect.String:
		return &node{kind: kindString}
	case reflect.Int, reflect.Int64:
		return &node{kind: kindInt}
	case reflect.Float64:
		return &node{kind: kindFloat}
	case reflect.Bool:
		return &node{kind: kindBool}
	}
	panic("config: no schema for " + t.String())
}

func addFields(n *node, t reflect.Type) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && name == "":
			addFields(n, f.Type) // retrieve.Config's keys are retrieval's own
		default:
			if name == "" {
				name = f.Name
			}
			n.fields[name] = schemaOf(f.Type)
		}
	}
}

// aliases are other spellings of a key that the seed plugins use:
// memory-lancedb writes embedding.baseUrl where memory-lancedb-pro writes
// baseURL. They apply in every object that has the canonical key.
var aliases = map[string]string{"baseUrl": "baseURL"}

// resolveAliases renames alias keys in place, in every object of the tree.
func resolveAliases(path string, v map[string]any, n *node, problems *[]string) {
	for _, k := range slices.Sorted(maps.Keys(v)) {
		canon, ok := aliases[k]
		if ok && n.kind == kindObject && n.fields[canon] != nil {
			if _, both := v[canon]; both {
				*problems = append(*problems, fmt.Sprintf("%s and %s are both set: keep one", join(path, k), join(path, canon)))
			} else {
				v[canon] = v[k]
			}
			delete(v, k)
			k = canon
		}
		child := n.elem
		if n.kind == kindObject {
			child = n.fields[k]
		}
		if m, ok := v[k].(map[string]any); ok && child != nil && (child.kind == kindObject || child.kind == kindMap) {
			resolveAliases(join(path, k), m, child, problems)
		}
	}
}

// check reports every unknown key and every value of the wrong type.
func check(path string, v any, n *node, problems *[]string) {
	switch n.kind {
	case kindObject, kindMap:
		m, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: expected an object, got %s", orTop(path), describe(v)))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			child := n.elem
			if n.kind == kindObject {
				if child = n.fields[k]; child == nil {
					*problems = append(*problems, unknownKey(path, k, n))
					continue
				}
			}
			check(join(path, k), m[k], child, problems)
		}
	case kindList:
		l, ok := v.([]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: expected a list, got %s", path, describe(v)))
			return
		}
		for i, e := range l {
			check(fmt.Sprintf("%s[%d]", path, i), e, n.elem, problems)
		}
	case kindString:
		if _, ok := v.(string); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: expected a string, got %s", path, describe(v)))
		}
	case kindBool:
		if _, ok := v.(bool); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: expected true or false, got %s", path, describe(v)))
		}
	case kindFloat:
		if _, ok := v.(float64); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: expected a number, got %s", path, describe(v)))
		}
	case kindInt:
		if _, ok := v.(string); ok && n.fromString {
			return // checked once ${ENV} is expanded
		}
		if f, ok := v.(float64); !ok || !isInt(f) {
			*problems = append(*problems, fmt.Sprintf("%s: expected an integer, got %s", path, describe(v)))
		}
	}
}

// maxInt keeps integers exact in a float64 and within every platform's int.
const maxInt = 1 << 31

func isInt(f float64) bool { return f == math.Trunc(f) && math.Abs(f) < maxInt }

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return fmt.Sprintf("string %q", v)
	case float64:
		return fmt.Sprintf("number %v", v)
	case bool:
		return fmt.Sprint(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// unknownKey names the closest valid key: a sibling a typo or two away, else
// keys elsewhere in the tree with that exact name (a key put at the wrong
// level, such as a top-level minScore).
func unknownKey(path, key string, n *node) string {
	msg := fmt.Sprintf("unknown key %q", join(path, key))
	if len(key) > maxSuggestLen {
		return msg
	}
	best, bestDist := "", math.MaxInt
	for _, name := range slices.Sorted(maps.Keys(n.fields)) {
		if d := editDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDist {
			best, bestDist = name, d
		}
	}
	if best != "" && bestDist <= max(1, len(key)/3) {
		return fmt.Sprintf("%s — did you mean %q?", msg, join(path, best))
	}
	var elsewhere []string
	walkKeys("", schema, func(p, name string) {
		if strings.EqualFold(name, key) {
			elsewhere = append(elsewhere, fmt.Sprintf("%q", p))
		}
	})
	if len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		return fmt.Sprintf("%s — did you mean %s?", msg, strings.Join(elsewhere, " or "))
	}
	return msg
}

// maxSuggestLen bounds the quadratic edit distance: no key is this long.
const maxSuggestLen = 64

func walkKeys(path string, n *node, fn func(path, name string)) {
	for name, child := range n.fields {
		fn(join(path, name), name)
		walkKeys(join(path, name), child, fn)
	}
}

// editDistance is the optimal-string-alignment distance: Levenshtein with
// adjacent transpositions counting 1, the commonest typo ("minScroe").
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

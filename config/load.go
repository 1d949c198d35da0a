package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/titanous/json5"
	"gopkg.in/yaml.v3"

	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
)

// Formats of a config file.
const (
	FormatJSON  = "json"
	FormatJSON5 = "json5"
	FormatYAML  = "yaml"
)

// defaultNames are looked for in the data dir, in this order.
var defaultNames = []string{"config.json", "config.json5", "config.yaml", "config.yml"}

// PluginIDs are the OpenClaw plugin entries whose config an OpenClaw document
// lends clawmem, most preferred first: clawmem's own entry, then the seed
// plugins it replaces.
var PluginIDs = []string{"clawmem", "memory-lancedb-pro", "memory-lancedb"}

// Options say which file to read and how to resolve it.
type Options struct {
	// Path is the file; empty means $CLAWMEM_CONFIG, else the first of
	// config.json, config.json5, config.yaml and config.yml in the data dir
	// (none: defaults only).
	Path string
	// DataDir, when set, overrides the file's dataDir.
	DataDir string
	// Lookup resolves ${VAR} references; default os.LookupEnv.
	Lookup func(string) (string, bool)
	// KeepUnset leaves a reference to an unset variable as written instead
	// of failing, for showing a config without its environment.
	KeepUnset bool
}

// File is a loaded configuration and where it came from.
type File struct {
	Config *Config
	// Path is the file read; empty when there was none (defaults only).
	Path   string
	Format string
	// Entry is where in an OpenClaw document the config object was
	// (plugins.entries.<id>.config); empty for a bare config object.
	Entry string
	// Warnings are problems that do not stop clawmem: keys it accepts from
	// the seed plugins but does not use, ambiguous files.
	Warnings []string

	// written is the config object as written (aliases resolved), its
	// ${VAR} references unexpanded: Effective shows them from here.
	written map[string]any
}

// Error is every problem found in one configuration.
type Error struct {
	File     string // the file, empty when there was none
	Entry    string // File.Entry
	Problems []string
}

func (e *Error) Error() string {
	where := "config"
	if e.File != "" {
		where += " " + e.File
	}
	if e.Entry != "" {
		where += " (" + e.Entry + ")"
	}
	return where + ": " + strings.Join(e.Problems, "; ")
}

// Load reads the configuration (see Options.Path) and applies defaults.
// dataDir, when non-empty, overrides the file's dataDir.
func Load(path, dataDir string) (*Config, error) {
	f, err := Read(Options{Path: path, DataDir: dataDir})
	if err != nil {
		return nil, err
	}
	return f.Config, nil
}

// Read finds, reads, checks and resolves the configuration.
func Read(o Options) (*File, error) {
	path, explicit, warnings := locate(o)
	var raw []byte
	if path != "" {
		var err error
		raw, err = os.ReadFile(path)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrNotExist) && !explicit:
			path = ""
		default:
			return nil, fmt.Errorf("read config: %w", err)
		}
	}
	f, err := Decode(raw, path, o)
	if err != nil {
		return nil, err
	}
	f.Warnings = append(warnings, f.Warnings...)
	f.Warnings = append(f.Warnings, lanceDBWarnings(f)...)
	return f, nil
}

func locate(o Options) (path string, explicit bool, warnings []string) {
	if o.Path != "" {
		return o.Path, true, nil
	}
	if p := os.Getenv(EnvConfig); p != "" {
		return p, true, nil
	}
	dir := o.DataDir
	if dir == "" {
		dir = DefaultDataDir()
	}
	var found []string
	for _, name := range defaultNames {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return "", false, nil
	}
	if len(found) > 1 {
		warnings = append(warnings, fmt.Sprintf("%s holds %s: using %s", dir, strings.Join(found, " and "), found[0]))
	}
	return filepath.Join(dir, found[0]), false, warnings
}

// Decode loads a configuration from raw, the contents of the file name
// (whose extension picks the format; empty raw is an empty config).
func Decode(raw []byte, name string, o Options) (*File, error) {
	f := &File{Path: name}
	fail := func(problems ...string) (*File, error) {
		return nil, &Error{File: name, Entry: f.Entry, Problems: problems}
	}
	parsed, format, warnings, err := parse(raw, name)
	if err != nil {
		return fail(err.Error())
	}
	f.Format, f.Warnings = format, warnings
	var problems []string
	top := normalize("", parsed, &problems).(map[string]any)
	if len(problems) > 0 {
		return fail(problems...)
	}
	obj, id, warnings, err := pluginEntry(top)
	if err != nil {
		return fail(err.Error())
	}
	if id != "" {
		f.Entry = "plugins.entries." + id + ".config"
	}
	f.Warnings = append(f.Warnings, warnings...)
	resolveAliases("", obj, schema, &problems)
	check("", obj, schema, &problems)
	f.Warnings = append(f.Warnings, ignoredWarnings(obj, id)...)

	lookup := o.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if o.KeepUnset {
		env := lookup
		lookup = func(name string) (string, bool) {
			if v, ok := env(name); ok && v != "" {
				return v, true
			}
			return "${" + name + "}", true
		}
	}
	resolved := expand("", obj, lookup, &problems).(map[string]any)
	numericStrings("", resolved, schema, &problems)
	if len(problems) > 0 {
		return fail(problems...)
	}

	c := &Config{Retrieval: Retrieval{Config: retrieve.DefaultConfig(), RecallCache: memory.DefaultRecallCacheSize,
		RecallCacheSeconds: int(memory.DefaultRecallCacheTTL / time.Second)}}
	b, err := json.Marshal(resolved)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(c)
	}
	if err != nil {
		return fail(err.Error()) // the checks above should have caught it
	}
	if o.DataDir != "" {
		c.DataDir = o.DataDir
		delete(obj, "dataDir") // not what is in effect, so not what show shows
	}
	c.applyDefaults()
	problems, warnings = c.validate()
	if len(problems) > 0 {
		return fail(problems...)
	}
	f.Warnings = append(f.Warnings, warnings...)
	f.Config, f.written = c, obj
	return f, nil
}

// parse decodes raw by name's extension: .json, .json5, .yaml or .yml; any
// other is tried as JSON, then JSON5, then YAML.
func parse(raw []byte, name string) (top any, format string, warnings []string, err error) {
	raw = bytes.TrimPrefix(raw, []byte("\ufeff"))
	if err := checkUTF8(raw); err != nil {
		return nil, "", nil, err
	}
	ext := strings.ToLower(filepath.Ext(name))
	if len(bytes.TrimSpace(raw)) == 0 {
		format = map[string]string{".json5": FormatJSON5, ".yaml": FormatYAML, ".yml": FormatYAML}[ext]
		if format == "" {
			format = FormatJSON
		}
		return map[string]any{}, format, nil, nil
	}
	switch ext {
	case ".json":
		jerr := json.Unmarshal(raw, &top)
		if jerr == nil {
			return topObject(top, FormatJSON, nil)
		}
		// OpenClaw's own openclaw.json is JSON5 under a .json name.
		if json5.Unmarshal(raw, &top) == nil {
			return topObject(top, FormatJSON5, []string{name + " is JSON5, not JSON (comments, trailing commas or unquoted keys): read as JSON5"})
		}
		return nil, FormatJSON, nil, fmt.Errorf("parse JSON: %w", at(raw, jerr))
	case ".json5":
		if err := json5.Unmarshal(raw, &top); err != nil {
			return nil, FormatJSON5, nil, fmt.Errorf("parse JSON5: %w", at(raw, err))
		}
		return topObject(top, FormatJSON5, nil)
	case ".yaml", ".yml":
		if err := unmarshalYAML(raw, &top); err != nil {
			return nil, FormatYAML, nil, fmt.Errorf("parse YAML: %w", err)
		}
		return topObject(top, FormatYAML, nil)
	}
	if json.Unmarshal(raw, &top) == nil {
		return topObject(top, FormatJSON, nil)
	}
	j5err := json5.Unmarshal(raw, &top)
	if j5err == nil {
		return topObject(top, FormatJSON5, nil)
	}
	yerr := unmarshalYAML(raw, &top)
	if yerr == nil {
		return topObject(top, FormatYAML, nil)
	}
	return nil, "", nil, fmt.Errorf("neither JSON, JSON5 nor YAML (JSON5: %v; YAML: %v)", at(raw, j5err), yerr)
}

// at says where in raw a JSON or JSON5 syntax error is, as YAML's errors do.
func at(raw []byte, err error) error {
	var offset int64
	var jerr *json.SyntaxError
	var j5err *json5.SyntaxError
	switch {
	case errors.As(err, &jerr):
		offset = jerr.Offset
	case errors.As(err, &j5err):
		offset = j5err.Offset
	default:
		return err
	}
	before := raw[:min(max(offset, 0), int64(len(raw)))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// unmarshalYAML rejects a stream of several documents: only the first would
// be read, silently.
func unmarshalYAML(raw []byte, v *any) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) { // only comments
			*v = nil
			return nil
		}
		return err
	}
	var next any
	if err := dec.Decode(&next); err == nil {
		return errors.New("more than one YAML document: a config is one")
	}
	return nil
}

// checkUTF8 refuses a file that is not UTF-8: the JSON decoders would
// quietly turn its bad bytes into U+FFFD, changing a key or a path.
func checkUTF8(raw []byte) error {
	if utf8.Valid(raw) {
		return nil
	}
	off := 0
	for off < len(raw) {
		r, n := utf8.DecodeRune(raw[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	before := raw[:off]
	return fmt.Errorf("not UTF-8: a bad byte at line %d, column %d", bytes.Count(before, []byte("\n"))+1, off-bytes.LastIndexByte(before, '\n'))
}

// maxDepth bounds how deep objects and lists nest. The deepest key, an
// OpenClaw document's plugins.entries.<id>.config.scopes.agentAccess.<id>
// list, is eight levels down; the checks build every value's path, which
// costs the square of the depth (JSON5 has no limit of its own).
const maxDepth = 100

// tooDeep reports whether v holds objects or lists nested more than left
// levels deep.
func tooDeep(v any, left int) bool {
	var children []any
	switch v := v.(type) {
	case map[string]any:
		children = slices.Collect(maps.Values(v))
	case map[any]any:
		children = slices.Collect(maps.Values(v))
	case []any:
		children = v
	default:
		return false
	}
	return left == 0 || slices.ContainsFunc(children, func(e any) bool { return tooDeep(e, left-1) })
}

func topObject(top any, format string, warnings []string) (any, string, []string, error) {
	if tooDeep(top, maxDepth) {
		return nil, format, nil, fmt.Errorf("values nest more than %d levels deep", maxDepth)
	}
	switch top.(type) {
	case map[string]any, map[any]any:
		return top, format, warnings, nil
	case nil:
		return map[string]any{}, format, warnings, nil
	}
	return nil, format, nil, fmt.Errorf("the top level is %s: want an object", describe(normalize("", top, new([]string))))
}

// normalize turns what the three decoders produce into one tree: objects
// with string keys, lists, strings, finite float64s and bools. A null is an
// unset key.
func normalize(path string, v any, problems *[]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if v[k] != nil {
				out[k] = normalize(join(path, k), v[k], problems)
			}
		}
		return out
	case map[any]any: // YAML with a key that is not a string
		out := make(map[string]any, len(v))
		keys := slices.SortedFunc(maps.Keys(v), func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			e := v[k]
			ks, ok := k.(string)
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s: key %v is not a string", orTop(path), k))
				continue
			}
			if e != nil {
				out[ks] = normalize(join(path, ks), e, problems)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(fmt.Sprintf("%s[%d]", path, i), e, problems)
		}
		return out
	case string, bool, nil:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			*problems = append(*problems, fmt.Sprintf("%s: expected a finite number, got %v", path, v))
			return 0.0
		}
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	*problems = append(*problems, fmt.Sprintf("%s: unsupported value of type %T", orTop(path), v))
	return nil
}

// pluginEntry takes the config object out of an OpenClaw document
// ({"plugins":{"entries":{"<id>":{"enabled":true,"config":{...}}}}}); any
// other top level is a config object itself (none has a plugins key).
//
// The entry is clawmem's, else memory-lancedb-pro's, else memory-lancedb's.
// clawmem's entry normally configures the OpenClaw plugin (natsUrl, ...),
// not the server: when it has no server key and a seed plugin's entry is
// there too, the seed plugin's config is the one that describes the
// memory (embedding, retrieval, scopes), so that one is used.
func pluginEntry(top map[string]any) (obj map[string]any, id string, warnings []string, err error) {
	plugins, ok := top["plugins"]
	if !ok {
		return top, "", nil, nil
	}
	pm, ok := plugins.(map[string]any)
	if !ok {
		return nil, "", nil, fmt.Errorf("plugins: expected an object (an OpenClaw document's plugins block), got %s", describe(plugins))
	}
	entries, ok := pm["entries"].(map[string]any)
	if !ok {
		return nil, "", nil, errors.New("plugins.entries: missing; an OpenClaw document must have a plugins.entries.<id> entry for " + strings.Join(PluginIDs, ", "))
	}
	var found []string
	for _, id := range PluginIDs {
		if _, ok := entries[id]; ok {
			found = append(found, id)
		}
	}
	if len(found) == 0 {
		return nil, "", nil, fmt.Errorf("plugins.entries has no %s entry (it has %s)",
			strings.Join(PluginIDs, ", "), strings.Join(slices.Sorted(maps.Keys(entries)), ", "))
	}
	id = found[0]
	if len(found) > 1 {
		why := ""
		if id == "clawmem" && !configuresServer(entries[id]) {
			id = found[1]
			why = " (the clawmem entry only configures the OpenClaw plugin)"
		}
		warnings = append(warnings, fmt.Sprintf("plugins.entries has %s: using %s%s", strings.Join(found, " and "), id, why))
	}
	entry, ok := entries[id].(map[string]any)
	if !ok {
		return nil, "", nil, fmt.Errorf("plugins.entries.%s: expected an object, got %s", id, describe(entries[id]))
	}
	if enabled, ok := entry["enabled"].(bool); ok && !enabled {
		warnings = append(warnings, fmt.Sprintf("plugins.entries.%s.enabled is false: clawmem uses its config all the same", id))
	}
	switch c := entry["config"].(type) {
	case nil:
		return map[string]any{}, id, warnings, nil
	case map[string]any:
		if id == "clawmem" {
			for k := range c {
				if slices.Contains(openClawPluginKeys, k) && schema.fields[k] == nil {
					delete(c, k)
				}
			}
		}
		return c, id, warnings, nil
	default:
		return nil, "", nil, fmt.Errorf("plugins.entries.%s.config: expected an object, got %s", id, describe(c))
	}
}

// openClawPluginKeys are the config keys of clawmem's OpenClaw plugin
// (integrations/openclaw/openclaw.plugin.json). In a clawmem entry the
// server takes the ones it shares (autoCapture, autoRecall,
// enableManagementTools) and leaves the others to the plugin.
var openClawPluginKeys = []string{"natsUrl", "credentialsFile", "agents", "defaultAgent", "autoRecall", "autoCapture",
	"recallTimeoutMs", "recallMaxChars", "enableManagementTools", "bufferMaxEvents", "requestTimeoutMs", "outboxMaxBytes",
	"persistOutbox", "stateDir"}

// configuresServer reports whether a clawmem entry has a key only the
// server knows.
func configuresServer(entry any) bool {
	e, _ := entry.(map[string]any)
	c, _ := e["config"].(map[string]any)
	for k := range c {
		if !slices.Contains(openClawPluginKeys, k) {
			return true
		}
	}
	return false
}

// ignored are the seed plugins' keys clawmem accepts but has no use for.
var ignored = []struct{ key, why string }{
	{"autoRecall", "recall is injected whenever OpenClaw's hook asks clawmem's context endpoint; whether it asks is the hook's setting"},
}

func ignoredWarnings(obj map[string]any, id string) []string {
	var warnings []string
	for _, k := range ignored {
		// In clawmem's own entry these are the OpenClaw plugin's settings.
		if _, ok := obj[k.key]; ok && id != "clawmem" {
			warnings = append(warnings, fmt.Sprintf("%s is accepted but ignored: %s", k.key, k.why))
		}
	}
	if _, ok := obj["autoCapture"]; !ok && id == "memory-lancedb" {
		warnings = append(warnings, "autoCapture is unset: memory-lancedb defaults it to false, clawmem (like memory-lancedb-pro) to true; set it to keep the plugin's behaviour")
	}
	return warnings
}

// lanceDBWarnings warns when the SQLite backend is given a seed plugin's
// LanceDB directory as dbPath, which a pasted config does.
func lanceDBWarnings(f *File) []string {
	if _, ok := f.written["dbPath"]; !ok || f.Config.Store.Backend == "lancedb" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(f.Config.DBPath, "memories.lance")); err != nil {
		return nil
	}
	return []string{fmt.Sprintf("dbPath %s is a LanceDB directory (it holds memories.lance), but store.backend is sqlite: clawmem does not read the plugin's memories from it; set store.backend to lancedb, or give clawmem a dbPath of its own and import them", f.Config.DBPath)}
}

// expand copies the tree with every string's ${VAR} references resolved.
func expand(path string, v any, lookup func(string) (string, bool), problems *[]string) any {
	switch v := v.(type) {
	case string:
		s, err := envsubst.ExpandWith(v, lookup)
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: %v", path, err))
			return v
		}
		return s
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out[k] = expand(join(path, k), v[k], lookup, problems)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = expand(fmt.Sprintf("%s[%d]", path, i), e, lookup, problems)
		}
		return out
	}
	return v
}

// numericStrings turns integers written as strings into numbers, in place.
func numericStrings(path string, m map[string]any, n *node, problems *[]string) {
	if n.kind != kindObject {
		return
	}
	for k, v := range m {
		child := n.fields[k]
		if child == nil {
			continue // an unknown key, already reported
		}
		switch v := v.(type) {
		case map[string]any:
			numericStrings(join(path, k), v, child, problems)
		case string:
			if child.kind != kindInt || !child.fromString {
				continue
			}
			i, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || i < 0 || i >= maxInt {
				*problems = append(*problems, fmt.Sprintf("%s: expected a positive integer, got %s", join(path, k), describe(v)))
				continue
			}
			m[k] = float64(i)
		}
	}
}

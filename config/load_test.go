package config

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
)

// testEnv is the environment the fixtures' ${VAR} references resolve from.
var testEnv = map[string]string{
	"JINA_API_KEY":         "jina_0123456789abcdefghijWXYZ",
	"OPENAI_API_KEY":       "sk-proj-0123456789abcdefABCD",
	"GEMINI_API_KEY":       "AIzaSy0123456789abcdefGHIJ",
	"CLAWMEM_INGEST_TOKEN": "tok-0123456789abcdefKLMN",
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

// decodeFile loads a testdata fixture with testEnv and a fixed data dir.
func decodeFile(t *testing.T, name string) *File {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(raw, name, Options{Lookup: lookupIn(testEnv)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func decodeString(body, name string, env map[string]string) (*File, error) {
	return Decode([]byte(body), name, Options{Lookup: lookupIn(env)})
}

func TestSeedExamplesLoad(t *testing.T) {
	t.Setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "")
	full := decodeFile(t, "seed-full-reference.json").Config
	want := retrieve.SeedConfig()
	if full.Retrieval.Config != want {
		t.Errorf("retrieval %+v, want the seed's %+v", full.Retrieval.Config, want)
	}
	e := full.Embedding
	if e.APIKey != testEnv["JINA_API_KEY"] || e.Model != "jina-embeddings-v5-text-small" || e.BaseURL != "https://api.jina.ai/v1" ||
		e.Dimensions != 1024 || e.TaskQuery != "retrieval.query" || e.TaskPassage != "retrieval.passage" || e.Normalized == nil || !*e.Normalized {
		t.Errorf("embedding %+v", e)
	}
	if r := full.Retrieval; r.RerankAPIKey != testEnv["JINA_API_KEY"] || r.RerankProvider != "jina" || r.RerankModel != "jina-reranker-v3" {
		t.Errorf("rerank %+v", r)
	}
	if full.Scopes.AgentAccess["discord-bot"][1] != "agent:discord-bot" || full.SessionMemory.MessageCount != 15 {
		t.Errorf("scopes %+v, session memory %+v", full.Scopes, full.SessionMemory)
	}
	if home, _ := os.UserHomeDir(); full.DBPath != filepath.Join(home, ".openclaw/memory/lancedb-pro") {
		t.Errorf("dbPath %q: ~ not expanded", full.DBPath)
	}

	jina := decodeFile(t, "seed-embedding-jina.json").Config
	if !reflect.DeepEqual(jina.Embedding, full.Embedding) {
		t.Errorf("the Jina example's embedding %+v differs from the full reference's %+v", jina.Embedding, full.Embedding)
	}

	sc := decodeFile(t, "seed-scopes.json").Config.Scopes
	if sc.Definitions["custom:work"].Description != "Work-related memories" || len(sc.AgentAccess["code-agent"]) != 3 {
		t.Errorf("scopes %+v", sc)
	}

	lance := decodeFile(t, "seed-memory-lancedb-openclaw.json")
	if lance.Entry != "plugins.entries.memory-lancedb.config" {
		t.Errorf("entry %q", lance.Entry)
	}
	c := lance.Config
	if c.Embedding.APIKey != testEnv["OPENAI_API_KEY"] || c.Embedding.Model != "text-embedding-3-small" || c.Embedding.Provider != "openai" ||
		!c.AutoRecall || !*c.AutoCapture || c.CaptureMaxChars != 500 {
		t.Errorf("memory-lancedb entry: %+v", c)
	}

	def := decodeFile(t, "seed-default-retrieval.json5").Config.Retrieval
	if def.Config != want || def.RerankModel != "jina-reranker-v3" || def.RerankEndpoint != "https://api.jina.ai/v1/rerank" {
		t.Errorf("DEFAULT_RETRIEVAL_CONFIG as JSON5: %+v", def)
	}
}

// TestDefaultsAreTheSeeds compares the defaults with the seed's Full
// Configuration Reference key by key, except embedding (an example: clawmem
// defaults to its local embedder) and dbPath (clawmem's store is SQLite,
// in its data dir).
func TestDefaultsAreTheSeeds(t *testing.T) {
	seed := decodeFile(t, "seed-full-reference.json").Config
	def, err := Decode(nil, "", Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := def.Config
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"autoCapture", *d.AutoCapture, *seed.AutoCapture},
		{"autoRecall", d.AutoRecall, seed.AutoRecall},
		{"captureAssistant", d.CaptureAssistant, seed.CaptureAssistant},
		{"enableManagementTools", d.EnableManagementTools, seed.EnableManagementTools},
		// A deliberate difference: no absolute cut-offs and no time decay by
		// default (retrieve.DefaultConfig); the seed's keys, given, still act.
		{"retrieval", d.Retrieval.Config, retrieve.DefaultConfig()},
		{"retrieval (seed's, given explicitly)", seed.Retrieval.Config, retrieve.SeedConfig()},
		{"retrieval.rerankModel", d.Retrieval.RerankModel, "jina-reranker-v3"},
		{"retrieval.rerankEndpoint", d.Retrieval.RerankEndpoint, "https://api.jina.ai/v1/rerank"},
		{"retrieval.rerankProvider", d.Retrieval.RerankProvider, seed.Retrieval.RerankProvider},
		{"scopes.default", d.Scopes.Default, seed.Scopes.Default},
		{"scopes.definitions.global", d.Scopes.Definitions["global"], seed.Scopes.Definitions["global"]},
		{"sessionMemory", d.SessionMemory, seed.SessionMemory},
		{"captureMaxChars", d.CaptureMaxChars, 500}, // seed 004 §7
		{"embedding.provider", d.Embedding.Provider, "local"},
		{"dbPath", d.DBPath, filepath.Join(d.DataDir, "store")},
		{"jobs.backup.schedule", d.Jobs.Backup.Schedule, "@daily"},
		{"jobs.backup.keep", d.Jobs.Backup.Keep, 7},
		{"jobs.backup.dir", d.Jobs.Backup.Dir, filepath.Join(d.DataDir, "backups")},
		{"jobs.backup.withVectors", d.Jobs.Backup.WithVectors, false},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: default %v, want %v", c.key, c.got, c.want)
		}
	}
}

func TestFormatsAgree(t *testing.T) {
	t.Setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "")
	want := decodeFile(t, "full.json")
	if want.Format != FormatJSON || *want.Config.AutoCapture || want.Config.Retrieval.RerankProvider != "voyage" ||
		want.Config.Jobs.Backup != (Backup{Schedule: "0 3 * * *", Keep: 14, Dir: "/srv/backups", WithVectors: true}) {
		t.Fatalf("full.json: %+v", want.Config)
	}
	for name, format := range map[string]string{
		"full.json5":         FormatJSON5,
		"full.yaml":          FormatYAML,
		"full.conf":          FormatYAML, // unknown extension: JSON, JSON5, then YAML
		"full-openclaw.json": FormatJSON,
	} {
		f := decodeFile(t, name)
		if f.Format != format {
			t.Errorf("%s read as %s, want %s", name, f.Format, format)
		}
		if !reflect.DeepEqual(f.Config, want.Config) {
			t.Errorf("%s differs from full.json:\n got %+v\nwant %+v", name, f.Config, want.Config)
		}
	}
	doc := decodeFile(t, "full-openclaw.json")
	if doc.Entry != "plugins.entries.clawmem.config" || !slices.Contains(doc.Warnings, "plugins.entries has clawmem and memory-lancedb: using clawmem") {
		t.Errorf("OpenClaw document: entry %q, warnings %q", doc.Entry, doc.Warnings)
	}
}

// TestClawmemPluginEntry: in a real openclaw.json the clawmem entry holds
// the OpenClaw plugin's settings, which the server leaves alone.
func TestClawmemPluginEntry(t *testing.T) {
	const plugin = `"clawmem": {"enabled": true, "config": {"natsUrl": "nats://127.0.0.1:4244", "credentialsFile": "~/.clawmem/agent.creds",
		"agents": {"main": "main"}, "defaultAgent": "main", "autoRecall": true, "autoCapture": false, "recallTimeoutMs": 1500,
		"recallMaxChars": 2000, "enableManagementTools": true, "bufferMaxEvents": 1000, "requestTimeoutMs": 10000}}`
	f, err := decodeString(`{"plugins": {"entries": {`+plugin+`}}}`, "openclaw.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Entry != "plugins.entries.clawmem.config" || *f.Config.AutoCapture || !f.Config.EnableManagementTools || len(f.Warnings) != 0 {
		t.Fatalf("plugin settings only: entry %q, config %+v, warnings %q", f.Entry, f.Config, f.Warnings)
	}
	f, err = decodeString(`{"plugins": {"entries": {`+plugin+`, "memory-lancedb-pro": {"enabled": false, "config": {
		"embedding": {"apiKey": "${JINA_API_KEY}", "model": "jina-embeddings-v5-text-small"}}}}}}`, "openclaw.json", testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if f.Entry != "plugins.entries.memory-lancedb-pro.config" || f.Config.Embedding.Model != "jina-embeddings-v5-text-small" ||
		!slices.Contains(f.Warnings, "plugins.entries has clawmem and memory-lancedb-pro: using memory-lancedb-pro (the clawmem entry only configures the OpenClaw plugin)") {
		t.Fatalf("beside memory-lancedb-pro: entry %q, warnings %q", f.Entry, f.Warnings)
	}
}

// TestOpenClawPluginKeysMatchThePlugin keeps openClawPluginKeys in step
// with the plugin's config schema.
func TestOpenClawPluginKeysMatchThePlugin(t *testing.T) {
	raw, err := os.ReadFile("../../../../integrations/openclaw/openclaw.plugin.json")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no integrations/openclaw in this tree")
	}
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		ConfigSchema struct {
			Properties map[string]any `json:"properties"`
		} `json:"configSchema"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	got, want := slices.Sorted(slices.Values(openClawPluginKeys)), slices.Sorted(maps.Keys(manifest.ConfigSchema.Properties))
	if !slices.Equal(got, want) {
		t.Fatalf("openClawPluginKeys %q, the plugin's config keys %q", got, want)
	}
}

func TestRejects(t *testing.T) {
	env := map[string]string{"DIMS": "abc", "SET": "x"}
	for _, c := range []struct {
		name, file, body, want string
	}{
		{"unknown key", "c.json", `{"retrieval":{"minScroe":0.5}}`, `unknown key "retrieval.minScroe" — did you mean "retrieval.minScore"?`},
		{"unknown top-level key", "c.json", `{"embeding":{}}`, `unknown key "embeding" — did you mean "embedding"?`},
		{"key at the wrong level", "c.json", `{"minScore":0.5}`, `unknown key "minScore" — did you mean "retrieval.minScore"?`},
		{"nested unknown key", "c.yaml", "scopes:\n  definitions:\n    custom:x:\n      descripton: y\n", `unknown key "scopes.definitions.custom:x.descripton" — did you mean "scopes.definitions.custom:x.description"?`},
		{"jobs unknown key", "c.json", `{"jobs":{"backup":{"kep":3}}}`, `unknown key "jobs.backup.kep" — did you mean "jobs.backup.keep"?`},
		{"unknown key far from any", "c.json", `{"zzzzzzzz":1}`, `unknown key "zzzzzzzz"`},
		{"wrong type bool", "c.json", `{"autoCapture":"yes"}`, `autoCapture: expected true or false, got string "yes"`},
		{"wrong type number", "c.json", `{"retrieval":{"minScore":"0.3"}}`, `retrieval.minScore: expected a number, got string "0.3"`},
		{"wrong type integer", "c.json", `{"captureMaxChars":500.5}`, `captureMaxChars: expected an integer, got number 500.5`},
		{"wrong type list", "c.json", `{"scopes":{"agentAccess":{"main":"global"}}}`, `scopes.agentAccess.main: expected a list, got string "global"`},
		{"wrong type object", "c.json", `{"embedding":"jina"}`, `embedding: expected an object, got string "jina"`},
		{"wrong type in list", "c.json", `{"distill":{"agents":["main",3]}}`, `distill.agents[1]: expected a string, got number 3`},
		{"minScore range", "c.json", `{"retrieval":{"minScore":1.5}}`, "retrieval.minScore is 1.5: allowed range 0..1"},
		{"hardMinScore range", "c.json", `{"retrieval":{"hardMinScore":-0.1}}`, "retrieval.hardMinScore is -0.1: allowed range 0..1"},
		{"weight range", "c.json", `{"retrieval":{"vectorWeight":2}}`, "retrieval.vectorWeight is 2: allowed range 0..1"},
		{"pool range", "c.json", `{"retrieval":{"candidatePoolSize":0}}`, "retrieval.candidatePoolSize is 0: allowed range 1..1000"},
		{"recall budget low", "c.json", `{"retrieval":{"recallTokenBudget":59}}`, "retrieval.recallTokenBudget is 59: allowed range 60..32000"},
		{"recall budget high", "c.json", `{"retrieval":{"recallTokenBudget":32001}}`, "retrieval.recallTokenBudget is 32001: allowed range 60..32000"},
		{"recall budget integer", "c.json", `{"retrieval":{"recallTokenBudget":500.5}}`, "retrieval.recallTokenBudget: expected an integer, got number 500.5"},
		{"core facts range", "c.json", `{"retrieval":{"coreFacts":11}}`, "retrieval.coreFacts is 11: allowed range 0..10"},
		{"core facts negative", "c.json", `{"retrieval":{"coreFacts":-1}}`, "retrieval.coreFacts is -1: allowed range 0..10"},
		{"recall cache negative", "c.json", `{"retrieval":{"recallCache":-1}}`, "retrieval.recallCache is -1: allowed range 0..100000 (0: off)"},
		{"recall cache high", "c.json", `{"retrieval":{"recallCache":100001}}`, "retrieval.recallCache is 100001: allowed range 0..100000 (0: off)"},
		{"recall cache seconds zero", "c.json", `{"retrieval":{"recallCacheSeconds":0}}`, "retrieval.recallCacheSeconds is 0: allowed range 1..3600"},
		{"recall cache seconds high", "c.json", `{"retrieval":{"recallCacheSeconds":3601}}`, "retrieval.recallCacheSeconds is 3601: allowed range 1..3600"},
		{"half-life range", "c.json", `{"retrieval":{"recencyHalfLifeDays":-1}}`, "retrieval.recencyHalfLifeDays is -1: allowed range 0..3650"},
		{"time decay range", "c.json", `{"retrieval":{"timeDecayHalfLifeDays":-5}}`, "retrieval.timeDecayHalfLifeDays is -5: allowed range 0..36500"},
		{"captureMaxChars low", "c.json", `{"captureMaxChars":99}`, "captureMaxChars is 99: allowed range 100..10000"},
		{"captureMaxChars high", "c.json", `{"captureMaxChars":10001}`, "captureMaxChars is 10001: allowed range 100..10000"},
		{"maxFinal range", "c.json", `{"distill":{"maxFinal":21}}`, "distill.maxFinal is 21: allowed range 0..20"},
		{"negative distill", "c.json", `{"distill":{"parallelism":-1}}`, "distill.parallelism is -1: must not be negative"},
		{"messageCount", "c.json", `{"sessionMemory":{"messageCount":-1}}`, "sessionMemory.messageCount is -1: want a positive number"},
		{"secrets mode", "c.json", `{"secrets":{"mode":"mask"}}`, `secrets.mode is "mask": want redact, refuse or off`},
		{"nats port", "c.json", `{"nats":{"port":70000}}`, "nats.port is 70000: allowed range -1..65535"},
		{"nats replicas", "c.json", `{"nats":{"url":"nats://a:4222","replicas":7}}`, "nats.replicas is 7: allowed range 1..5"},
		{"replicas without a cluster", "c.json", `{"nats":{"replicas":3}}`, "nats.replicas is 3, but the embedded server is one node"},
		{"backup keep", "c.json", `{"jobs":{"backup":{"keep":-1}}}`, "jobs.backup.keep is -1: want a positive number"},
		{"backup schedule", "c.json", `{"jobs":{"backup":{"schedule":"daily"}}}`, `jobs.backup.schedule is "daily"`},
		{"distill schedule", "c.json", `{"distill":{"schedule":"61 * * * *"}}`, `distill.schedule is "61 * * * *"`},
		{"rerank provider", "c.json", `{"retrieval":{"rerankProvider":"cohere"}}`, `retrieval.rerankProvider is "cohere": want one of jina, siliconflow, voyage, pinecone, dashscope, tei`},
		{"embedding provider", "c.json", `{"embedding":{"provider":"openai-compatible"}}`, `embedding.provider is "openai-compatible": want openai or local`},
		{"store index", "c.json", `{"store":{"index":"hnsw"}}`, `store.index is "hnsw": want auto, exact or approximate`},
		{"store memory", "c.json", `{"store":{"memory":"int4"}}`, `store.memory is "int4": want float32 or int8`},
		{"int8 exact", "c.json", `{"store":{"index":"exact","memory":"int8"}}`, `store.memory "int8" needs the approximate index`},
		{"undefined default scope", "c.json", `{"scopes":{"default":"team"}}`, `scopes.default "team" is not defined`},
		{"ingest addr", "c.json", `{"ingest":{"addr":"7433"}}`, `ingest.addr is "7433": want host:port`},
		{"nats sync", "c.json", `{"nats":{"sync":"sometimes"}}`, `nats.sync is "sometimes": want default, always or a positive duration such as 1s`},
		{"nats sync negative", "c.json", `{"nats":{"sync":"-1s"}}`, `nats.sync is "-1s"`},
		{"nats lease too short", "c.json", `{"nats":{"leaseTTL":"1s"}}`, `nats.leaseTTL is "1s": want a duration from 3s to 5m such as 15s`},
		{"nats lease not a duration", "c.json", `{"nats":{"leaseTTL":"soon"}}`, `nats.leaseTTL is "soon"`},
		{"ingest insecure off loopback", "c.json", `{"ingest":{"addr":"0.0.0.0:7433","insecure":true}}`, `ingest.insecure is true but ingest.addr 0.0.0.0:7433 is off loopback`},
		{"ingest insecure with a token", "c.json", `{"ingest":{"insecure":true,"token":"t"}}`, `ingest.insecure is true and ingest.token is set`},
		{"ui listen", "c.json", `{"ui":{"listen":"7434"}}`, `ui.listen is "7434": want host:port, or off`},
		{"ui off loopback", "c.json", `{"ui":{"listen":"0.0.0.0:7434"}}`, `ui.listen is 0.0.0.0:7434, off loopback: set ui.adminToken`},
		{"ui read token only", "c.json", `{"ui":{"listen":"10.0.0.5:7434","readToken":"r"}}`, `off loopback: set ui.adminToken`},
		{"unset env", "c.json", `{"embedding":{"apiKey":"${CLAWMEM_TEST_UNSET}"}}`, "embedding.apiKey: environment variable CLAWMEM_TEST_UNSET is not set"},
		{"unset env in a list", "c.json", `{"distill":{"agents":["${SET}","${CLAWMEM_TEST_UNSET}"]}}`, "distill.agents[1]: environment variable CLAWMEM_TEST_UNSET is not set"},
		{"unset env in a map", "c.yaml", "scopes:\n  definitions:\n    custom:x: {description: '${NOPE}'}\n", "scopes.definitions.custom:x.description: environment variable NOPE is not set"},
		{"malformed reference", "c.json", `{"nats":{"url":"nats://${HOST"}}`, "nats.url: malformed ${VAR} reference"},
		{"dimensions not a number", "c.json", `{"embedding":{"dimensions":"${DIMS}"}}`, `embedding.dimensions: expected a positive integer, got string "abc"`},
		{"both spellings", "c.json", `{"embedding":{"baseUrl":"http://a","baseURL":"http://b"}}`, "embedding.baseUrl and embedding.baseURL are both set"},
		{"not finite", "c.json5", `{retrieval: {minScore: NaN}}`, "retrieval.minScore: expected a finite number"},
		{"malformed JSON", "c.json", `{"store":`, "parse JSON"},
		{"malformed JSON5", "c.json5", `{store: {index: }}`, "parse JSON5"},
		{"malformed YAML", "c.yaml", "store:\n  index: exact\n bad: [", "parse YAML"},
		{"two YAML documents", "c.yml", "autoCapture: true\n---\nautoCapture: false\n", "more than one YAML document"},
		{"nothing it can read", "c.conf", "{[}: :", "neither JSON, JSON5 nor YAML"},
		{"top level not an object", "c.json", `[1, 2]`, "the top level is a list: want an object"},
		{"YAML key not a string", "c.yaml", "scopes:\n  agentAccess:\n    1: [global]\n", "scopes.agentAccess: key 1 is not a string"},
		{"not UTF-8", "c.json", "{\"embedding\":\n {\"apiKey\":\"sk-\xff\xfe\"}}", "not UTF-8: a bad byte at line 2, column 16"},
		{"not UTF-8 in JSON5", "c.json5", "{dbPath: '/srv/\xc3'}", "not UTF-8: a bad byte at line 1, column 16"},
		// JSON5 has no depth limit, and the checks cost the square of the
		// depth: 100,000 levels took minutes.
		{"nesting 100,000 deep", "c.json", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), "values nest more than 100 levels deep"},
		{"objects nesting deep", "c.json5", "{scopes: " + strings.Repeat("{a: ", 5000) + "1" + strings.Repeat("}", 5001), "values nest more than 100 levels deep"},
		{"YAML nesting deep", "c.yaml", "scopes:\n  agentAccess:\n    main: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "values nest more than 100 levels deep"},
		{"OpenClaw document without an entry", "openclaw.json", `{"plugins":{"entries":{"test-memory":{}}}}`, "plugins.entries has no clawmem, memory-lancedb-pro, memory-lancedb entry (it has test-memory)"},
		{"OpenClaw entry config not an object", "openclaw.json", `{"plugins":{"entries":{"clawmem":{"config":[]}}}}`, "plugins.entries.clawmem.config: expected an object, got a list"},
		{"OpenClaw entry with a bad key", "openclaw.json", `{"plugins":{"entries":{"memory-lancedb-pro":{"config":{"autoCaptur":true}}}}}`, `config openclaw.json (plugins.entries.memory-lancedb-pro.config): unknown key "autoCaptur" — did you mean "autoCapture"?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeString(c.body, c.file, env)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nlacks %q", err, c.want)
			}
			if strings.HasPrefix(c.name, "unknown key far") && strings.Contains(err.Error(), "did you mean") {
				t.Fatalf("suggests a key for gibberish: %q", err)
			}
		})
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	_, err := decodeString(`{"retrieval":{"minScroe":1},"autoCapture":1,"embedding":{"apiKey":"${NOPE}"}}`, "c.json", nil)
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
}

func TestEnvExpandedInEveryString(t *testing.T) {
	t.Setenv("OPENCLAW_JSONL_DISTILL_ALLOWED_AGENT_IDS", "")
	env := map[string]string{"ROOT": "/srv", "AGENT": "main", "HOST": "nats.internal", "DIMS": " 768 ", "TOK": "secret-token-1234"}
	f, err := decodeString(`{
		"dataDir": "${ROOT}/clawmem",
		"embedding": {"baseURL": "http://${HOST}:11434/v1", "model": "nomic-embed-text", "dimensions": "${DIMS}"},
		"scopes": {"definitions": {"custom:x": {"description": "for ${AGENT}"}}, "agentAccess": {"main": ["global", "agent:${AGENT}"]}},
		"nats": {"url": "nats://${HOST}:4222"},
		"ingest": {"token": "${TOK}"},
		"distill": {"agents": ["${AGENT}"]},
		"jobs": {"backup": {"dir": "${ROOT}/backups"}}
	}`, "c.json", env)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Config
	for _, got := range []struct{ got, want string }{
		{c.DataDir, "/srv/clawmem"}, {c.DBPath, "/srv/clawmem/store"}, {c.Embedding.BaseURL, "http://nats.internal:11434/v1"},
		{c.Scopes.Definitions["custom:x"].Description, "for main"}, {c.Scopes.AgentAccess["main"][1], "agent:main"},
		{c.NATS.URL, "nats://nats.internal:4222"}, {c.Ingest.Token, "secret-token-1234"}, {c.Distill.Agents[0], "main"},
		{c.Jobs.Backup.Dir, "/srv/backups"},
	} {
		if got.got != got.want {
			t.Errorf("got %q, want %q", got.got, got.want)
		}
	}
	if c.Embedding.Dimensions != 768 {
		t.Errorf("dimensions from ${DIMS}: %d", c.Embedding.Dimensions)
	}
}

func TestWarnings(t *testing.T) {
	for _, c := range []struct {
		name, file, body, want string
	}{
		{"ignored key", "c.json", `{"autoRecall":true}`, "autoRecall is accepted but ignored"},
		{"memory-lancedb autoCapture default", "openclaw.json", `{"plugins":{"entries":{"memory-lancedb":{"config":{}}}}}`, "memory-lancedb defaults it to false"},
		{"disabled entry", "openclaw.json", `{"plugins":{"entries":{"memory-lancedb-pro":{"enabled":false,"config":{}}}}}`, "plugins.entries.memory-lancedb-pro.enabled is false"},
		{"JSON5 in a .json file", "openclaw.json", "{\n  // OpenClaw writes JSON5\n  autoCapture: true,\n}", "is JSON5, not JSON"},
		{"undefined scope in agentAccess", "c.json", `{"scopes":{"agentAccess":{"main":["team"]}}}`, `scopes.agentAccess.main names undefined scope "team"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := decodeString(c.body, c.file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(f.Warnings, func(w string) bool { return strings.Contains(w, c.want) }) {
				t.Fatalf("warnings %q lack %q", f.Warnings, c.want)
			}
		})
	}
	f, err := decodeString(`{"embedding":{"model":"text-embedding-3-small"},"enableManagementTools":true}`, "c.json", nil)
	if err != nil || len(f.Warnings) != 0 {
		t.Fatalf("a plain config warns: %v %q", err, f.Warnings)
	}
}

func TestFindsTheConfigFile(t *testing.T) {
	t.Setenv(EnvConfig, "")
	dir := t.TempDir()
	if f, err := Read(Options{DataDir: dir}); err != nil || f.Path != "" || f.Config.CaptureMaxChars != 500 {
		t.Fatalf("no file: %v %+v", err, f)
	}
	for _, name := range []string{"config.yaml", "config.json5"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{captureMaxChars: 700}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Read(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != filepath.Join(dir, "config.json5") || f.Config.CaptureMaxChars != 700 ||
		!slices.ContainsFunc(f.Warnings, func(w string) bool { return strings.Contains(w, "config.json5 and config.yaml: using config.json5") }) {
		t.Fatalf("found %s (%d), warnings %q", f.Path, f.Config.CaptureMaxChars, f.Warnings)
	}
	if _, err := Read(Options{Path: filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Fatal("an explicit file that does not exist gave no error")
	}
}

func TestWarnsAboutALanceDBDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "memories.lance"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := writeConfig(t, `{"dbPath":"`+dir+`"}`)
	f, err := Read(Options{Path: p, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(f.Warnings, func(w string) bool { return strings.Contains(w, "is a LanceDB directory") }) {
		t.Fatalf("warnings %q", f.Warnings)
	}
	p = writeConfig(t, `{"dbPath":"`+dir+`","store":{"backend":"lancedb"}}`)
	if f, err = Read(Options{Path: p, DataDir: t.TempDir()}); err != nil || len(f.Warnings) != 0 {
		t.Fatalf("backend lancedb on a LanceDB directory: %v %q", err, f.Warnings)
	}
}

func TestMasksStorageOptions(t *testing.T) {
	f, err := decodeString(`{"dbPath":"s3://bucket/clawmem","store":{"backend":"lancedb","storageOptions":{
		"endpoint":"http://127.0.0.1:9000","region":"us-east-1","accessKeyId":"AKIA0123456789ABCDEF",
		"secretAccessKey":"${S3_SECRET}","sessionToken":"FwoGZXIvYXdzEJr0123456789abcd","allowHttp":true}}}`,
		"c.json", map[string]string{"S3_SECRET": "wJalrXUtnFEMI0123456789EXAMPLEKEY"})
	if err != nil {
		t.Fatal(err)
	}
	for resolved, want := range map[bool]map[string]any{
		false: {"endpoint": "http://127.0.0.1:9000", "region": "us-east-1", "accessKeyId": "****CDEF",
			"secretAccessKey": "${S3_SECRET}", "sessionToken": "****abcd", "allowHttp": true},
		true: {"endpoint": "http://127.0.0.1:9000", "region": "us-east-1", "accessKeyId": "****CDEF",
			"secretAccessKey": "****EKEY", "sessionToken": "****abcd", "allowHttp": true},
	} {
		out, err := f.Effective(resolved)
		if err != nil {
			t.Fatal(err)
		}
		if got := out["store"].(map[string]any)["storageOptions"]; !reflect.DeepEqual(got, want) {
			t.Errorf("resolved %v: storageOptions %v, want %v", resolved, got, want)
		}
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"short":                         "****",
		"jina_0123456789abcdefghijWXYZ": "jina_****WXYZ",
		"sk-proj-0123456789abcdefABCD":  "sk-****ABCD",
		"0123456789abcdef":              "****cdef",
		"jina_0123456":                  "****3456", // the prefix would show half of it
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEffective(t *testing.T) {
	env := map[string]string{"JINA_API_KEY": testEnv["JINA_API_KEY"], "ROOT": "/srv"}
	body := `{
		"dbPath": "${ROOT}/store",
		"embedding": {"apiKey": "${JINA_API_KEY}", "baseURL": "https://api.jina.ai/v1", "dimensions": "${DIMS}"},
		"retrieval": {"rerankApiKey": "jina_literal0123456789abcdWXYZ"},
		"ingest": {"token": "literal-token-0123456789"},
		"nats": {"url": "nats://clawmem:hunter2hunter2@nats.internal:4222", "credentials": "-----BEGIN NATS USER JWT-----\nabc\n------END NATS USER JWT------\n"},
		"distill": {"agents": ["${AGENT}"]}
	}`
	if _, err := Decode([]byte(body), "c.json", Options{Lookup: lookupIn(env)}); err == nil {
		t.Fatal("unset ${DIMS} and ${AGENT} resolved")
	}
	f, err := Decode([]byte(body), "c.json", Options{Lookup: lookupIn(env), KeepUnset: true, DataDir: "/data"})
	if err == nil {
		t.Fatal("${DIMS} unset is no number, yet it loaded")
	}
	body = strings.Replace(body, `"${DIMS}"`, "1024", 1)
	f, err = Decode([]byte(body), "c.json", Options{Lookup: lookupIn(env), KeepUnset: true, DataDir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	written, err := f.Effective(false)
	if err != nil {
		t.Fatal(err)
	}
	env["AGENT"] = "main"
	f, err = Decode([]byte(body), "c.json", Options{Lookup: lookupIn(env), DataDir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := f.Effective(true)
	if err != nil {
		t.Fatal(err)
	}
	get := func(m map[string]any, path ...string) any {
		var v any = m
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		return v
	}
	for _, c := range []struct {
		path           []string
		written, resol any
	}{
		{[]string{"dbPath"}, "${ROOT}/store", "/srv/store"},
		{[]string{"dataDir"}, "/data", "/data"},
		{[]string{"embedding", "apiKey"}, "${JINA_API_KEY}", "jina_****WXYZ"},
		{[]string{"embedding", "baseURL"}, "https://api.jina.ai/v1", "https://api.jina.ai/v1"},
		{[]string{"retrieval", "rerankApiKey"}, "jina_****WXYZ", "jina_****WXYZ"},
		{[]string{"ingest", "token"}, "****6789", "****6789"},
		{[]string{"nats", "url"}, "nats://clawmem:****@nats.internal:4222", "nats://clawmem:****@nats.internal:4222"},
		{[]string{"nats", "credentials"}, "****---\n", "****---\n"},
		{[]string{"distill", "agents"}, []any{"${AGENT}"}, []any{"main"}},
		{[]string{"retrieval", "minScore"}, 0.0, 0.0}, // clawmem's default: no cut-off (retrieve.DefaultConfig)
		{[]string{"jobs", "backup", "keep"}, 7.0, 7.0},
	} {
		if got := get(written, c.path...); !reflect.DeepEqual(got, c.written) {
			t.Errorf("show %v = %#v, want %#v", c.path, got, c.written)
		}
		if got := get(resolved, c.path...); !reflect.DeepEqual(got, c.resol) {
			t.Errorf("show --resolved %v = %#v, want %#v", c.path, got, c.resol)
		}
	}
}

func FuzzDecode(f *testing.F) {
	fixtures, _ := filepath.Glob("testdata/*")
	for _, p := range fixtures {
		raw, err := os.ReadFile(p)
		if err == nil {
			f.Add(raw, uint8(0))
		}
	}
	for _, s := range []string{"", "{}", "[]", "null", `{"plugins":{"entries":{"clawmem":{"config":{"a":1}}}}}`,
		"a: &x [*x]", "{retrieval: {minScore: Infinity}}", `{"embedding":{"dimensions":"${X}"}}`, "- 1\n- 2", "? [a]\n: b"} {
		f.Add([]byte(s), uint8(0))
	}
	names := []string{"c.json", "c.json5", "c.yaml", "c"}
	lookup := lookupIn(map[string]string{"X": "12", "JINA_API_KEY": "k"})
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		name := names[int(which)%len(names)]
		for _, keep := range []bool{false, true} {
			file, err := Decode(raw, name, Options{Lookup: lookup, KeepUnset: keep, DataDir: "/nonexistent/clawmem"})
			if err != nil {
				var ce *Error
				if !errors.As(err, &ce) || len(ce.Problems) == 0 {
					t.Fatalf("error %v is not a config.Error with problems", err)
				}
				continue
			}
			for _, resolved := range []bool{false, true} {
				if _, err := file.Effective(resolved); err != nil {
					t.Fatalf("Effective(%v): %v", resolved, err)
				}
			}
		}
	})
}

// The recall cache's keys: the defaults when unset, and 0 kept as given
// (it turns the cache off) rather than defaulted.
func TestRecallCacheKeys(t *testing.T) {
	for _, tc := range []struct {
		in      string
		size    int
		seconds int
	}{
		{`{}`, memory.DefaultRecallCacheSize, 30},
		{`{"retrieval":{"recallCache":0}}`, 0, 30},
		{`{"retrieval":{"recallCache":1000,"recallCacheSeconds":5}}`, 1000, 5},
	} {
		c, err := Decode([]byte(tc.in), "c.json", Options{DataDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		r := c.Config.Retrieval
		if r.RecallCache != tc.size || r.RecallCacheSeconds != tc.seconds || r.RecallCacheTTL() != time.Duration(tc.seconds)*time.Second {
			t.Errorf("%s: recallCache %d, recallCacheSeconds %d (TTL %s); want %d, %d", tc.in, r.RecallCache, r.RecallCacheSeconds,
				r.RecallCacheTTL(), tc.size, tc.seconds)
		}
	}
}

// The auto-recall block's keys: the defaults when unset, and 0 core
// facts kept as given (it turns them off) rather than defaulted.
func TestRecallBlockKeys(t *testing.T) {
	for _, tc := range []struct {
		in                string
		budget, coreFacts int
	}{
		{`{}`, retrieve.DefaultRecallTokenBudget, retrieve.DefaultCoreFacts},
		{`{"retrieval":{"recallTokenBudget":1200,"coreFacts":0}}`, 1200, 0},
	} {
		c, err := Decode([]byte(tc.in), "c.json", Options{DataDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if r := c.Config.Retrieval; r.RecallTokenBudget != tc.budget || r.CoreFacts != tc.coreFacts {
			t.Errorf("%s: recallTokenBudget %d, coreFacts %d; want %d, %d", tc.in, r.RecallTokenBudget, r.CoreFacts, tc.budget, tc.coreFacts)
		}
	}
}

package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/internal/testkit"
)

// factScenariosFile holds the fact-change scenarios (testdata/facts/README.md).
const factScenariosFile = "../testdata/facts/scenarios.json"

// The targets for the rule path: the current fact is recall's first
// answer for at least 95% of the scenarios, and a superseded fact reaches
// the auto-recall block in at most 2% of them.
const (
	factMinTop1         = 0.95
	factMaxStaleInBlock = 0.02
)

// factMinTop1LLM is the target for the smart-extraction path.
const factMinTop1LLM = 0.98

// factReached is what the paths reached on the scenario set (the README's
// figures); the test fails factSlack below them.
var factReached = map[string]factFigures{
	"rules": {Top1: 0.977, StaleInBlock: 0.012},
	"llm":   {Top1: 0.988, StaleInBlock: 0},
}

const factSlack = 0.02

// factLangs are the languages the supersede rules understand, in report order.
var factLangs = []string{"en", "cs", "de", "zh", "ja", "ko"}

// factScenario is one fact that changes: steps stored in order, the question
// asking for its current value, and which steps must be current, superseded
// or kept current although similar.
type factScenario struct {
	ID       string   `json:"id"`
	Lang     string   `json:"lang"`
	Steps    []string `json:"steps"`
	Question string   `json:"question"`
	Current  string   `json:"current"`
	Stale    []string `json:"stale"`
	Keep     []string `json:"keep"`
	Note     string   `json:"note,omitempty"`
}

// loadFactScenarios reads and checks the scenario file: unique ids, a known
// language, at least ten scenarios per language, 1–3 value changes, 1–3
// distractors, and current, stale and keep texts that are steps, each in
// one role only.
func loadFactScenarios(path string) ([]factScenario, error) { return readFactScenarios(path, false) }

// readFactScenarios is loadFactScenarios; with noChange, a scenario may
// also hold no change at all (no stale texts: a second pet, an added
// hobby), where the first statement must stay current.
func readFactScenarios(path string, noChange bool) ([]factScenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var scs []factScenario
	if err := json.Unmarshal(data, &scs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ids := map[string]bool{}
	perLang := map[string]int{}
	for _, sc := range scs {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s: scenario %q: %s", path, sc.ID, fmt.Sprintf(format, a...))
		}
		switch {
		case sc.ID == "" || ids[sc.ID]:
			return nil, bad("missing or repeated id")
		case !slices.Contains(factLangs, sc.Lang):
			return nil, bad("unknown lang %q", sc.Lang)
		case strings.TrimSpace(sc.Question) == "":
			return nil, bad("no question")
		case len(sc.Stale) == 0 && !noChange || len(sc.Stale) > 3:
			return nil, bad("%d stale texts, want 1 to 3 value changes", len(sc.Stale))
		}
		ids[sc.ID] = true
		perLang[sc.Lang]++
		role := map[string]string{}
		for _, s := range sc.Steps {
			if role[s] != "" {
				return nil, bad("step %q repeated", s)
			}
			role[s] = "distractor"
		}
		for _, r := range []struct {
			name  string
			texts []string
		}{{"current", []string{sc.Current}}, {"stale", sc.Stale}, {"keep", sc.Keep}} {
			for _, s := range r.texts {
				switch role[s] {
				case "":
					return nil, bad("%s text %q is not a step", r.name, s)
				case "distractor":
					role[s] = r.name
				default:
					return nil, bad("%s text %q is also %s", r.name, s, role[s])
				}
			}
		}
		if n := len(sc.Steps) - 1 - len(sc.Stale) - len(sc.Keep); n < 1 || n > 3 {
			return nil, bad("%d distractors, want 1 to 3", n)
		}
	}
	for _, lang := range factLangs {
		if perLang[lang] < 10 {
			return nil, fmt.Errorf("%s: %s has %d scenarios, want at least 10", path, lang, perLang[lang])
		}
	}
	return scs, nil
}

// factOutcome is what one scenario measured.
type factOutcome struct {
	sc           factScenario
	top1         bool // (a) recall's first answer is the current fact
	staleRecall  bool // (b) a stale fact is in recall's top 5
	staleBlock   bool // (c) a stale fact is in the auto-recall block
	keepCurrent  int  // (d) keep texts still current, of len(sc.Keep)
	staleEnded   int  // (e) stale texts superseded, of len(sc.Stale)
	currentBlock bool // the current fact is in the auto-recall block (for information)
	currentEnded bool // the current fact was superseded (a wrongful supersede)
	why          []string
}

func (o factOutcome) ok() bool {
	return o.top1 && !o.staleRecall && !o.staleBlock && o.keepCurrent == len(o.sc.Keep) && o.staleEnded == len(o.sc.Stale)
}

// runFactScenario stores the scenario's steps in a fresh engine, asks its
// question with Recall and Context, and checks what holds.
func runFactScenario(t *testing.T, emb embed.Embedder, sc factScenario, llm bool) factOutcome {
	t.Helper()
	ctx := context.Background()
	eng, closeStore := testkit.EngineWith(t, "", emb, retrieve.DefaultConfig())
	defer closeStore()
	who := memory.Agent("eval")
	out := factOutcome{sc: sc}
	ids := map[string]string{} // step text → memory id
	for _, step := range sc.Steps {
		req := memory.StoreRequest{Text: step}
		if llm {
			req = scriptedExtraction(t, eng, who, sc, step, ids)
		}
		res, err := eng.Store(ctx, who, req, memory.DedupTool)
		switch {
		case err != nil:
			out.why = append(out.why, fmt.Sprintf("store %q: %v", step, err))
		case res.Status == memory.Duplicate:
			out.why = append(out.why, fmt.Sprintf("store %q: a duplicate of %q (score %.3f)", step, res.Memory.Text, res.Score))
		}
		if err == nil {
			ids[step] = res.Memory.ID
		}
		// The steps are said one after another: each gets a later
		// millisecond than the last, or which of two is newer — what
		// recall's ranking of changes reads — would be a tie broken by
		// chance, and the figures would differ from run to run.
		for at := time.Now().UnixMilli(); time.Now().UnixMilli() == at; {
			time.Sleep(100 * time.Microsecond)
		}
	}
	isStale := func(id string) bool {
		return slices.ContainsFunc(sc.Stale, func(s string) bool { return ids[s] != "" && ids[s] == id })
	}
	currentID := ids[sc.Current]

	rec, err := eng.Recall(ctx, who, sc.Question, memory.RecallOptions{Limit: 5})
	if err != nil {
		t.Fatalf("%s: recall: %v", sc.ID, err)
	}
	if len(rec.Candidates) > 0 && currentID != "" && rec.Candidates[0].Memory.ID == currentID {
		out.top1 = true
	} else if len(rec.Candidates) == 0 {
		out.why = append(out.why, "recall found nothing")
	} else {
		rank := "not in the top 5"
		if i := slices.IndexFunc(rec.Candidates, func(c retrieve.Candidate) bool { return c.Memory.ID == currentID }); i >= 0 && currentID != "" {
			rank = fmt.Sprintf("ranked %d", i+1)
		}
		out.why = append(out.why, fmt.Sprintf("recall's first answer is %q, the current fact %s", rec.Candidates[0].Memory.Text, rank))
	}
	for _, c := range rec.Candidates {
		if isStale(c.Memory.ID) {
			out.staleRecall = true
			out.why = append(out.why, fmt.Sprintf("stale %q in recall's top 5", c.Memory.Text))
		}
	}

	cr, err := eng.Context(ctx, who, sc.Question, memory.ContextOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("%s: auto-recall: %v", sc.ID, err)
	}
	if cr.TimedOut || cr.Skipped != "" {
		out.why = append(out.why, fmt.Sprintf("auto-recall timed out (%v) or skipped (%q)", cr.TimedOut, cr.Skipped))
	}
	for _, c := range cr.Memories {
		if isStale(c.Memory.ID) {
			out.staleBlock = true
			out.why = append(out.why, fmt.Sprintf("stale %q in the auto-recall block", c.Memory.Text))
		}
		if currentID != "" && c.Memory.ID == currentID {
			out.currentBlock = true
		}
	}

	current := func(text string) (bool, error) {
		id := ids[text]
		if id == "" {
			return false, fmt.Errorf("%q was not stored", text)
		}
		m, err := eng.Backend().Get(ctx, id, engine.AllScopes())
		if err != nil {
			return false, err
		}
		return m.Current(), nil
	}
	for _, k := range sc.Keep {
		cur, err := current(k)
		switch {
		case err != nil:
			out.why = append(out.why, fmt.Sprintf("keep: %v", err))
		case cur:
			out.keepCurrent++
		default:
			out.why = append(out.why, fmt.Sprintf("keep %q was superseded", k))
		}
	}
	if cur, err := current(sc.Current); err == nil && !cur {
		out.currentEnded = true
		out.why = append(out.why, fmt.Sprintf("current %q was superseded", sc.Current))
	}
	for _, s := range sc.Stale {
		cur, err := current(s)
		switch {
		case err != nil:
			out.why = append(out.why, fmt.Sprintf("stale: %v", err))
		case !cur:
			out.staleEnded++
		default:
			out.why = append(out.why, fmt.Sprintf("stale %q still current; %s", s, ruleVerdict(sc, s)))
		}
	}
	return out
}

// scriptedExtraction is what smart extraction stores for one step when the
// model follows the scenario's script: a new value of the fact (a stale
// text after the first, or the current one) is an UPDATE of the value
// before it — if the model is shown that memory: extraction shows the
// agent's five memories most like the message (workers/capture/extract.go), and a
// model cannot name a memory it was not shown, so it then ADDs the fact
// (and the rules still may supersede). Everything else is an ADD.
func scriptedExtraction(t *testing.T, eng *memory.Engine, who memory.Who, sc factScenario, step string, ids map[string]string) memory.StoreRequest {
	t.Helper()
	req := memory.StoreRequest{Text: step}
	chain := append(slices.Clone(sc.Stale), sc.Current)
	i := slices.Index(chain, step)
	if i <= 0 || ids[chain[i-1]] == "" {
		return req
	}
	shown, err := eng.Recall(context.Background(), who, step, memory.RecallOptions{Limit: 5})
	if err != nil {
		t.Fatalf("%s: similar memories: %v", sc.ID, err)
	}
	if slices.ContainsFunc(shown.Candidates, func(c retrieve.Candidate) bool { return c.Memory.ID == ids[chain[i-1]] }) {
		req.Supersedes, req.SupersedesIfCurrent = ids[chain[i-1]], true
	}
	return req
}

// ruleVerdict says why the rules left a stale text current: how they read
// it and the texts stored after it of the same slot.
func ruleVerdict(sc factScenario, stale string) string {
	slot := func(text string) string {
		if s, ok := rules.FactSlot(text); ok {
			return fmt.Sprintf("%s/%s=%s", s.Subject, s.Key, s.Value)
		}
		return "not understood"
	}
	parts := []string{fmt.Sprintf("FactSlot(%q): %s", stale, slot(stale))}
	after := sc.Steps[slices.Index(sc.Steps, stale)+1:]
	for _, s := range after {
		if s == sc.Current || slices.Contains(sc.Stale, s) {
			parts = append(parts, fmt.Sprintf("FactSlot(%q): %s, Supersedes: %v", s, slot(s), rules.Supersedes(s, stale)))
		}
	}
	return strings.Join(parts, "; ")
}

// factFigures are one group's figures: (a)–(c) as shares of scenarios,
// (d) and (e) as shares of the keep and stale texts.
type factFigures struct {
	Scenarios     int
	Top1          float64 // (a)
	StaleInRecall float64 // (b) share of scenarios with a stale fact in recall's top 5
	StaleInBlock  float64 // (c) share of scenarios with a stale fact in the auto-recall block
	KeepCurrent   float64 // (d) share of keep texts still current
	StaleEnded    float64 // (e) share of stale texts superseded
	CurrentBlock  float64 // the current fact is in the auto-recall block (for information)
	Keeps, Stales int
}

func factFiguresOf(outs []factOutcome) factFigures {
	var f factFigures
	var top1, staleRecall, staleBlock, curBlock, keep, ended int
	for _, o := range outs {
		f.Scenarios++
		f.Keeps += len(o.sc.Keep)
		f.Stales += len(o.sc.Stale)
		keep += o.keepCurrent
		ended += o.staleEnded
		for _, c := range []struct {
			hit bool
			n   *int
		}{{o.top1, &top1}, {o.staleRecall, &staleRecall}, {o.staleBlock, &staleBlock}, {o.currentBlock, &curBlock}} {
			if c.hit {
				*c.n++
			}
		}
	}
	share := func(n, of int) float64 {
		if of == 0 {
			return 1
		}
		return float64(n) / float64(of)
	}
	f.Top1 = share(top1, f.Scenarios)
	f.StaleInRecall = 1 - share(f.Scenarios-staleRecall, f.Scenarios)
	f.StaleInBlock = 1 - share(f.Scenarios-staleBlock, f.Scenarios)
	f.CurrentBlock = share(curBlock, f.Scenarios)
	f.KeepCurrent = share(keep, f.Keeps)
	f.StaleEnded = share(ended, f.Stales)
	return f
}

// factReport formats the figures per language and overall as table lines.
func factReport(outs []factOutcome) (lines []string, overall factFigures) {
	lines = append(lines, "lang  scen  (a)top1  (b)stale@recall5  (c)stale@auto  (d)keep-current  (e)superseded  current@auto")
	row := func(name string, f factFigures) string {
		return fmt.Sprintf("%-5s %4d  %7.3f  %16.3f  %13.3f  %9.3f (%2d)  %8.3f (%2d)  %12.3f",
			name, f.Scenarios, f.Top1, f.StaleInRecall, f.StaleInBlock, f.KeepCurrent, f.Keeps, f.StaleEnded, f.Stales, f.CurrentBlock)
	}
	for _, lang := range factLangs {
		var group []factOutcome
		for _, o := range outs {
			if o.sc.Lang == lang {
				group = append(group, o)
			}
		}
		lines = append(lines, row(lang, factFiguresOf(group)))
	}
	overall = factFiguresOf(outs)
	lines = append(lines, row("all", overall))
	// Split by phrasing: the documented sentence forms, and the natural
	// phrasings outside them (scenarios with a note).
	var forms, other []factOutcome
	for _, o := range outs {
		if o.sc.Note == "" {
			forms = append(forms, o)
		} else {
			other = append(other, o)
		}
	}
	lines = append(lines, row("forms", factFiguresOf(forms)), row("other", factFiguresOf(other)))
	return lines, overall
}

// TestFactChanges stores each fact-change scenario in a fresh engine (local
// embedder, default retrieval) and measures whether the current fact is
// what recall and auto-recall give back, and the superseded ones are not:
// on the rule path, and on the smart-extraction path with a model that
// follows the scenario's script. Print the figures with
// `go test ./eval -run TestFactChanges -v`.
//
// It fails when a similar fact that must stay (a sibling's home, a second
// pet) is ever superseded, and when a figure falls below what was reached
// (factReached) — not below the targets, which the log compares.
func TestFactChanges(t *testing.T) {
	scs, err := loadFactScenarios(factScenariosFile)
	if err != nil {
		t.Fatal(err)
	}
	emb := testkit.LocalEmbedder(t, 0) // the local embedder's default size
	for _, path := range []struct {
		name   string
		llm    bool
		target float64
	}{{"rules", false, factMinTop1}, {"llm", true, factMinTop1LLM}} {
		t.Run(path.name, func(t *testing.T) {
			outs := make([]factOutcome, 0, len(scs))
			for _, sc := range scs {
				outs = append(outs, runFactScenario(t, emb, sc, path.llm))
			}
			lines, overall := factReport(outs)
			for _, l := range lines {
				t.Logf("%s", l)
			}
			for _, o := range outs {
				if o.ok() {
					continue
				}
				note := ""
				if o.sc.Note != "" {
					note = " [" + o.sc.Note + "]"
				}
				t.Logf("FAIL %s%s: %s", o.sc.ID, note, strings.Join(o.why, " | "))
			}
			t.Logf("issue targets: top-1 %.3f (target %.2f), stale in the auto-recall block %.3f (target at most %.2f)",
				overall.Top1, path.target, overall.StaleInBlock, factMaxStaleInBlock)
			if overall.KeepCurrent < 1 {
				t.Errorf("a fact that must stay was superseded: keep-current %.3f", overall.KeepCurrent)
			}
			reached := factReached[path.name]
			if overall.Top1 < reached.Top1-factSlack {
				t.Errorf("top-1 %.3f fell below the %.3f reached", overall.Top1, reached.Top1)
			}
			if overall.StaleInBlock > reached.StaleInBlock+factSlack {
				t.Errorf("a stale fact in the auto-recall block for %.3f of scenarios, above the %.3f reached", overall.StaleInBlock, reached.StaleInBlock)
			}
		})
	}
}

// factHeldOutFile holds fact-change scenarios written by someone who never
// saw the supersede rules or scenarios.json, phrased freely, a fifth of
// them no change at all; nobody tunes on it, and its failures are counted,
// never shown.
const factHeldOutFile = "../testdata/facts/heldout.json"

// The targets on the held-out scenarios are top-1 at least 0.95
// and no wrongful supersede. The rule path reached 0.283 (the supersede
// rules understand few of these phrasings, and the local embedder finds
// "it's an iPhone 16 now" for "what phone do I have?" only by luck), 0.331
// with recall ranking a newer memory that tells an older one changed above
// it when the older led by at most 0.05 (retrieve.Outdated), and 0.457
// with the change read by rules or the replace model and, when the rules
// read it, ranked first wherever it was: the floor keeps that from getting
// worse, the gap is on issue 30. Lowering another person's fact for a
// question about the asker (retrieve.Whose; its factor chosen on the dev
// scenarios) made it 0.520.
const (
	factHeldOutTargetTop1 = 0.95
	factHeldOutMinTop1    = 0.50
)

// factDevFile holds 72 fact-change scenarios by another writer, read for
// what the rules miss (retrieve.Outdated and rules.Replaces were written
// from them): top-1 0.403 before, 0.486 with Outdated, 0.778 with the
// change ranked first wherever it was, 0.833 with another person's fact
// lowered for a question about the asker (retrieve.Whose: 0.819 at
// factors 0.9 and 0.8, 0.833 at 0.7 and 0.5); no wrongful supersede.
const (
	factDevFile    = "../testdata/facts/dev.json"
	factDevMinTop1 = 0.81
)

// TestFactChangesDev measures the dev scenarios as the held-out ones are
// measured, and logs what each miss got wrong.
func TestFactChangesDev(t *testing.T) {
	scs, err := readFactScenarios(factDevFile, true)
	if err != nil {
		t.Fatal(err)
	}
	emb := testkit.LocalEmbedder(t, 0)
	outs := make([]factOutcome, 0, len(scs))
	wrongful := 0
	for _, sc := range scs {
		o := runFactScenario(t, emb, sc, false)
		outs = append(outs, o)
		wrongful += len(sc.Keep) - o.keepCurrent
		if o.currentEnded {
			wrongful++
		}
		if !o.top1 {
			t.Logf("%s: %v", sc.ID, o.why)
		}
	}
	_, overall := factReport(outs)
	t.Logf("dev: top-1 %.3f; wrongful supersedes %d", overall.Top1, wrongful)
	if overall.Top1 < factDevMinTop1 || wrongful > 0 {
		t.Errorf("dev top-1 %.3f (floor %.2f), %d wrongful supersedes (want 0)", overall.Top1, factDevMinTop1, wrongful)
	}
}

// TestFactChangesHeldOut measures the rule path on the held-out scenarios:
// the current fact is recall's first answer, and no fact that must stay
// (a keep text, or the current one) is superseded.
func TestFactChangesHeldOut(t *testing.T) {
	scs, err := readFactScenarios(factHeldOutFile, true)
	if err != nil {
		t.Fatal(err)
	}
	emb := testkit.LocalEmbedder(t, 0)
	outs := make([]factOutcome, 0, len(scs))
	wrongful, keeps := 0, 0
	for _, sc := range scs {
		o := runFactScenario(t, emb, sc, false)
		outs = append(outs, o)
		keeps += len(sc.Keep) + 1
		wrongful += len(sc.Keep) - o.keepCurrent
		if o.currentEnded {
			wrongful++
		}
	}
	lines, overall := factReport(outs)
	for _, l := range lines[:len(lines)-2] { // the forms/other split means nothing here
		t.Logf("%s", l)
	}
	t.Logf("held out: top-1 %.3f (target %.2f); wrongful supersedes %d of %d facts that must stay (target 0)",
		overall.Top1, factHeldOutTargetTop1, wrongful, keeps)
	if overall.Top1 < factHeldOutMinTop1 {
		t.Errorf("top-1 %.3f fell below the floor %.2f", overall.Top1, factHeldOutMinTop1)
	}
	if wrongful > 0 {
		t.Errorf("%d wrongful supersedes, want 0", wrongful)
	}
}

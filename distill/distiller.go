package distill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// Distiller names recorded in Result.Distiller.
const (
	DistillerLLM        = "llm"
	DistillerExtractive = "extractive"
)

// Distillation defaults, from the seed where it has one.
const (
	DefaultMaxFinal        = 20
	MaxFinalLimit          = 20
	DefaultParallelism     = 4
	DefaultDedupSimilarity = 0.92
	maxParallelism         = 64
)

// Config tunes a Distiller. Zero values mean the defaults.
type Config struct {
	// MapChunkChars bounds one map call's transcript, in characters. Default 12000.
	MapChunkChars int
	// MapOverlapMsgs is how many messages each chunk repeats from the one
	// before. Default 10; negative means none.
	MapOverlapMsgs int
	// MaxChunks caps the map calls per session. Default 200.
	MaxChunks int
	// MaxFinal is how many lessons a session yields at most, 0 to 20.
	// 0 means the default 20; negative means none (distillation is a no-op);
	// above 20 means 20.
	MaxFinal int
	// Parallelism bounds concurrent map calls. Default 4.
	Parallelism int
	// MaxTokens is the session's token budget (input plus output); once
	// spent, no further map call (or reduce call) starts. 0 means unlimited.
	MaxTokens int
	// DedupSimilarity is the cosine similarity at or above which two lessons'
	// embeddings count as duplicates. Default 0.92.
	DedupSimilarity float64
	// LLMReduce adds an LLM pass that merges near-duplicates and resolves
	// contradictions; its output is evidence-checked again.
	LLMReduce bool
	// CaptureMaxChars is the extractive distiller's longest user message,
	// as in auto-capture. Default rules.DefaultCaptureMaxChars.
	CaptureMaxChars int
	// Secrets (secrets.mode): unless off, the transcript's credentials are
	// redacted before any model reads it, so no lesson can hold one; in
	// refuse mode a lesson quoting a redacted one is dropped. Default
	// redact.
	Secrets redact.Mode
}

func (c Config) withDefaults() Config {
	switch {
	case c.MaxFinal == 0:
		c.MaxFinal = DefaultMaxFinal
	case c.MaxFinal < 0:
		c.MaxFinal = 0
	}
	c.MaxFinal = min(c.MaxFinal, MaxFinalLimit)
	if c.Parallelism <= 0 {
		c.Parallelism = DefaultParallelism
	}
	c.Parallelism = min(c.Parallelism, maxParallelism)
	if c.DedupSimilarity <= 0 || c.DedupSimilarity > 1 {
		c.DedupSimilarity = DefaultDedupSimilarity
	}
	c.MaxTokens = max(c.MaxTokens, 0)
	if c.Secrets == "" {
		c.Secrets = redact.ModeRedact
	}
	return c
}

func (c Config) chunkOptions() ChunkOptions {
	return ChunkOptions{MaxChars: c.MapChunkChars, OverlapMsgs: c.MapOverlapMsgs, MaxChunks: c.MaxChunks}
}

// Options are per-session settings.
type Options struct {
	// OnProgress is called after each LLM call (map or reduce), never
	// concurrently; the distill worker sends a JetStream InProgress from it
	// so a long session is not redelivered mid-way.
	OnProgress func()
}

// Stats describe one distillation.
type Stats struct {
	Messages          int           `json:"messages"`
	Language          Language      `json:"language"`
	Chunks            int           `json:"chunks"`
	UncoveredMessages int           `json:"uncoveredMessages,omitempty"` // beyond MaxChunks
	MapCalls          int           `json:"mapCalls"`                    // made, failed ones included
	MapErrors         int           `json:"mapErrors"`
	SkippedChunks     int           `json:"skippedChunks,omitempty"` // not mapped: budget spent
	BudgetExceeded    bool          `json:"budgetExceeded,omitempty"`
	Candidates        int           `json:"candidates"`  // lessons the map calls proposed
	Unsupported       int           `json:"unsupported"` // dropped: evidence not in the transcript
	Filtered          int           `json:"filtered"`    // dropped: generic advice, a secret, an injection
	Merged            int           `json:"merged"`      // folded into a duplicate
	Kept              int           `json:"kept"`
	InputTokens       int           `json:"inputTokens"`
	OutputTokens      int           `json:"outputTokens"`
	Duration          time.Duration `json:"duration"`
}

// Result is a session's lessons, best first. Zero lessons is a valid
// result: most sessions teach nothing worth remembering.
type Result struct {
	Lessons   []Lesson `json:"lessons"`
	Stats     Stats    `json:"stats"`
	Distiller string   `json:"distiller"` // "llm" or "extractive"
	Model     string   `json:"model,omitempty"`
	// Warnings name optional steps that were skipped (embedding dedup, LLM
	// reduce) and why; the lessons are still valid.
	Warnings []string `json:"warnings,omitempty"`
}

// Distiller turns sessions into lessons. It is safe for concurrent use.
type Distiller struct {
	cfg Config
	llm LLM
	emb embed.Embedder
}

// New builds a Distiller. With llm nil it distils extractively, by the
// auto-capture rules; with emb nil it de-duplicates by text only.
func New(cfg Config, llm LLM, emb embed.Embedder) *Distiller {
	return &Distiller{cfg: cfg.withDefaults(), llm: llm, emb: emb}
}

// Distill distils one session's messages. Messages are cited by their N;
// unless those are positive and increasing they are renumbered 1..n. The
// result does not depend on Parallelism.
func (d *Distiller) Distill(ctx context.Context, msgs []Message, opts Options) (Result, error) {
	start := time.Now()
	msgs = numbered(msgs)
	if d.cfg.Secrets != redact.ModeOff {
		msgs = withoutSecrets(msgs)
	}
	res := Result{Distiller: DistillerExtractive}
	if d.llm != nil {
		res.Distiller, res.Model = DistillerLLM, d.llm.Model()
	}
	res.Stats.Messages, res.Stats.Language = len(msgs), DetectLanguage(msgs)
	var err error
	switch {
	case d.cfg.MaxFinal == 0 || len(msgs) == 0:
	case d.llm == nil:
		err = d.extract(ctx, msgs, &res)
	default:
		err = d.distillLLM(ctx, msgs, opts, &res)
	}
	res.Stats.Kept = len(res.Lessons)
	res.Stats.Duration = time.Since(start)
	return res, err
}

func (d *Distiller) reducer(maxFinal int) reducer {
	return reducer{emb: d.emb, similarity: d.cfg.DedupSimilarity, maxFinal: maxFinal, secrets: d.cfg.Secrets}
}

// withoutSecrets returns msgs with their credentials redacted (a copy
// when any is; the caller's slice is left alone).
func withoutSecrets(msgs []Message) []Message {
	var out []Message
	for i, m := range msgs {
		text, fs := redact.Redact(m.Text)
		if len(fs) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i].Text = text
	}
	if out == nil {
		return msgs
	}
	return out
}

// extract is the distiller without an LLM: user messages the auto-capture
// rules would keep, each its own evidence.
func (d *Distiller) extract(ctx context.Context, msgs []Message, res *Result) error {
	var candidates []Lesson
	capture := rules.CaptureOptions{MaxChars: d.cfg.CaptureMaxChars}
	for _, m := range msgs {
		if m.Role != RoleUser || !rules.ShouldCapture(m.Text, capture) || rules.IsNoise(m.Text) {
			continue
		}
		candidates = append(candidates, Lesson{
			Category:   rules.DetectCategory(m.Text),
			Importance: schemas.DefaultImportance,
			Text:       cleanText(m.Text),
			Evidence:   []Evidence{{MessageIDs: []int{m.N}, Quote: m.Text}},
		})
	}
	res.Stats.Candidates = len(candidates)
	d.finish(ctx, candidates, d.cfg.MaxFinal, res)
	return ctx.Err()
}

// finish reduces candidates into res.
func (d *Distiller) finish(ctx context.Context, candidates []Lesson, maxFinal int, res *Result) {
	lessons, st := d.reducer(maxFinal).reduce(ctx, candidates)
	res.Lessons = lessons
	res.Stats.Filtered += st.filtered
	res.Stats.Merged += st.merged
	if st.warning != "" {
		res.Warnings = append(res.Warnings, st.warning)
	}
}

// distillLLM maps chunks in parallel, validates each chunk's lessons in
// chunk order, then reduces.
func (d *Distiller) distillLLM(ctx context.Context, msgs []Message, opts Options, res *Result) error {
	chunks, uncovered := SplitChunks(msgs, d.cfg.chunkOptions())
	res.Stats.Chunks, res.Stats.UncoveredMessages = len(chunks), uncovered
	m := &meter{budget: d.cfg.MaxTokens, onProgress: opts.OnProgress}
	outs := d.mapAll(ctx, chunks, res.Stats.Language, m)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("distill: %w", err)
	}
	candidates, err := d.collect(outs, msgs, res)
	res.Stats.InputTokens, res.Stats.OutputTokens, res.Stats.BudgetExceeded = m.totals()
	if err != nil {
		return err
	}
	if !d.cfg.LLMReduce || len(candidates) < 2 {
		d.finish(ctx, candidates, d.cfg.MaxFinal, res)
		return ctx.Err()
	}
	d.finish(ctx, candidates, 2*d.cfg.MaxFinal, res)
	d.llmReduce(ctx, msgs, m, res)
	res.Stats.InputTokens, res.Stats.OutputTokens, res.Stats.BudgetExceeded = m.totals()
	return ctx.Err()
}

// mapOutcome is one chunk's map call.
type mapOutcome struct {
	called  bool
	lessons []Lesson
	err     error
}

// mapAll runs the map calls, at most Parallelism at once, issuing them in
// chunk order and stopping once the token budget is spent.
func (d *Distiller) mapAll(ctx context.Context, chunks []Chunk, lang Language, m *meter) []mapOutcome {
	outs := make([]mapOutcome, len(chunks))
	slots := make(chan struct{}, d.cfg.Parallelism)
	var wg sync.WaitGroup
issue:
	for i := range chunks {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break issue
		}
		if m.spent() {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			outs[i] = d.mapChunk(ctx, chunks[i], len(chunks), lang, m)
		}()
	}
	wg.Wait()
	return outs
}

func (d *Distiller) mapChunk(ctx context.Context, c Chunk, total int, lang Language, m *meter) mapOutcome {
	resp, err := d.llm.Generate(ctx, mapPrompt(c, total, lang))
	m.record(resp)
	if err != nil {
		return mapOutcome{called: true, err: fmt.Errorf("map chunk %d (messages %d-%d): %w", c.Index+1, c.First(), c.Last(), err)}
	}
	lessons, err := ParseLessons(resp.Text)
	if err != nil {
		return mapOutcome{called: true, err: fmt.Errorf("map chunk %d (messages %d-%d): %w", c.Index+1, c.First(), c.Last(), err)}
	}
	return mapOutcome{called: true, lessons: lessons}
}

// collect validates each chunk's lessons against the transcript, keeps at
// most MaxLessonsPerChunk of them, and fails only when every call failed.
func (d *Distiller) collect(outs []mapOutcome, msgs []Message, res *Result) ([]Lesson, error) {
	v := newValidator(msgs)
	var candidates []Lesson
	var errs []error
	for _, o := range outs {
		switch {
		case !o.called:
			res.Stats.SkippedChunks++
			continue
		case o.err != nil:
			res.Stats.MapCalls++
			res.Stats.MapErrors++
			errs = append(errs, o.err)
			continue
		}
		res.Stats.MapCalls++
		res.Stats.Candidates += len(o.lessons)
		kept := 0
		for _, l := range o.lessons {
			if l.Evidence = v.check(l.Evidence); len(l.Evidence) == 0 {
				res.Stats.Unsupported++
				continue
			}
			if kept < MaxLessonsPerChunk {
				candidates = append(candidates, l)
				kept++
			}
		}
	}
	if res.Stats.MapCalls > 0 && res.Stats.MapErrors == res.Stats.MapCalls {
		return nil, fmt.Errorf("distill: all %d map calls failed: %w", res.Stats.MapCalls, errors.Join(errs...))
	}
	return candidates, nil
}

// llmReduce asks the model to merge near-duplicates among res.Lessons. Its
// answer is evidence-checked and reduced again; if the call fails, or
// leaves nothing with valid evidence, the local reduce's lessons stand,
// cut to MaxFinal.
func (d *Distiller) llmReduce(ctx context.Context, msgs []Message, m *meter, res *Result) {
	local := rankAndCut(res.Lessons, d.cfg.MaxFinal)
	lessons, err := d.askReduce(ctx, res.Lessons, msgs, m, res.Stats.Language)
	if err != nil || len(lessons) == 0 {
		if err == nil {
			err = errors.New("no lesson with valid evidence")
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("LLM reduce skipped: %v", err))
		res.Lessons = local
		return
	}
	d.finish(ctx, lessons, d.cfg.MaxFinal, res)
}

func (d *Distiller) askReduce(ctx context.Context, lessons []Lesson, msgs []Message, m *meter, lang Language) ([]Lesson, error) {
	if m.spent() {
		return nil, errors.New("token budget spent")
	}
	req, err := reducePrompt(lessons, d.cfg.MaxFinal, lang)
	if err != nil {
		return nil, err
	}
	resp, err := d.llm.Generate(ctx, req)
	m.record(resp)
	if err != nil {
		return nil, err
	}
	out, err := ParseLessons(resp.Text)
	if err != nil {
		return nil, err
	}
	out, _ = ValidateEvidence(out, msgs)
	return out, nil
}

// meter adds up token usage against the budget and reports progress; its
// callback never runs concurrently with itself.
type meter struct {
	mu           sync.Mutex
	budget       int
	input        int
	output       int
	exceeded     bool
	onProgress   func()
	progressLock sync.Mutex
}

func (m *meter) record(r Response) {
	m.mu.Lock()
	m.input += r.InputTokens
	m.output += r.OutputTokens
	m.mu.Unlock()
	if m.onProgress != nil {
		m.progressLock.Lock()
		defer m.progressLock.Unlock()
		m.onProgress()
	}
}

// spent reports (and remembers) that the budget is used up.
func (m *meter) spent() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.budget > 0 && m.input+m.output >= m.budget {
		m.exceeded = true
	}
	return m.exceeded
}

func (m *meter) totals() (input, output int, exceeded bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.input, m.output, m.exceeded
}

package retrieve

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// tol is the tolerance for scores computed through a chain of float64
// operations; every expected value below is derived by hand from the
// formula it pins, so a real change of formula moves it far beyond this.
const tol = 1e-9

// stageNow is the clock every stage test measures ages against.
var stageNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// daysAgo is the epoch-ms timestamp of a memory created d days before stageNow.
func daysAgo(d float64) int64 {
	return stageNow.Add(-time.Duration(d * float64(24*time.Hour))).UnixMilli()
}

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

func vecHit(id string, score, cosine float64) engine.SearchResult {
	return engine.SearchResult{Memory: schemas.Memory{ID: id}, Score: score, Raw: cosine}
}

func bmHit(id string, score float64) engine.SearchResult {
	return engine.SearchResult{Memory: schemas.Memory{ID: id}, Score: score, Raw: 7}
}

func TestFuse(t *testing.T) {
	// Shares α, β for the non-default weights, spelled out so each expected
	// value can be checked against the doc comment of Fuse by hand.
	const (
		a37 = 0.3 / 0.7 // vScale at 0.3/0.7: min(1, 0.3/0.7)
		a57 = 0.5 / 0.7 // vScale at 0.5/0.5
	)
	tests := []struct {
		name         string
		vw, bw       float64
		vec, bm25    []engine.SearchResult
		want         map[string]float64
		wantOrderIDs []string
	}{
		{
			// The seed's three cases at its default weights.
			name: "defaults: vector only is v",
			vw:   0.7, bw: 0.3,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75)},
			want: map[string]float64{"v": 0.8},
		},
		{
			name: "defaults: BM25 only is floored at 0.5",
			vw:   0.7, bw: 0.3,
			bm25: []engine.SearchResult{bmHit("low", 0.3), bmHit("high", 0.9)},
			want: map[string]float64{"low": 0.5, "high": 0.9},
		},
		{
			name: "defaults: both is v·1.15",
			vw:   0.7, bw: 0.3,
			vec:  []engine.SearchResult{vecHit("x", 0.6, 1/3.0)},
			bm25: []engine.SearchResult{bmHit("x", 0.4)},
			want: map[string]float64{"x": 0.6 * 1.15},
		},
		{
			// clawmem's own rule (documented on Fuse): a hit in both never
			// scores below what the BM25 hit alone would have, so a strong
			// keyword match is not punished for also being a weak vector hit.
			name: "defaults: both never below the BM25-only score",
			vw:   0.7, bw: 0.3,
			vec:  []engine.SearchResult{vecHit("x", 0.6, 1/3.0)},
			bm25: []engine.SearchResult{bmHit("x", 0.95)},
			want: map[string]float64{"x": 0.95},
		},
		{
			name: "defaults: both is clamped to 1",
			vw:   0.7, bw: 0.3,
			vec:  []engine.SearchResult{vecHit("x", 0.95, 0.947)},
			bm25: []engine.SearchResult{bmHit("x", 0.6)},
			want: map[string]float64{"x": 1},
		},
		{
			// Only the shares matter: 0.35/0.15 is the same split as 0.7/0.3.
			name: "weights are shares",
			vw:   0.35, bw: 0.15,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75), vecHit("x", 0.6, 1/3.0)},
			bm25: []engine.SearchResult{bmHit("x", 0.4), bmHit("b", 0.3)},
			want: map[string]float64{"v": 0.8, "x": 0.69, "b": 0.5},
		},
		{
			// β = 0: BM25-only hits are worth nothing and give no boost.
			name: "bm25Weight 0 silences BM25",
			vw:   1, bw: 0,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75), vecHit("x", 0.6, 1/3.0)},
			bm25: []engine.SearchResult{bmHit("x", 0.4), bmHit("b", 0.9)},
			want: map[string]float64{"v": 0.8, "x": 0.6, "b": 0},
		},
		{
			// α = 0.3, β = 0.7: the vector side is scaled by 0.3/0.7, the
			// BM25 side by min(1, 0.7/0.3) = 1, the boost is 1 + 0.5·0.7.
			name: "vectorWeight 0.3, bm25Weight 0.7",
			vw:   0.3, bw: 0.7,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75), vecHit("x", 0.9, 0.889), vecHit("y", 0.6, 1/3.0)},
			bm25: []engine.SearchResult{bmHit("x", 0.4), bmHit("y", 0.7), bmHit("b", 0.3)},
			want: map[string]float64{
				"v": 0.8 * a37,
				"x": math.Max(0.9*a37*1.35, 0.5), // 0.5207 beats the 0.5 floor
				"y": 0.7,                         // 0.6·a37·1.35 = 0.347 < 0.7
				"b": 0.5,
			},
		},
		{
			name: "vectorWeight 0.5, bm25Weight 0.5",
			vw:   0.5, bw: 0.5,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75), vecHit("x", 0.9, 0.889)},
			bm25: []engine.SearchResult{bmHit("x", 0.2), bmHit("b", 0.3)},
			want: map[string]float64{"v": 0.8 * a57, "x": 0.9 * a57 * 1.25, "b": 0.5},
		},
		{
			name: "vectorWeight 0 silences vectors",
			vw:   0, bw: 1,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75), vecHit("x", 0.9, 0.889)},
			bm25: []engine.SearchResult{bmHit("x", 0.2), bmHit("b", 0.6)},
			want: map[string]float64{"v": 0, "x": 0.5, "b": 0.6},
		},
		{
			// Validate refuses 0/0, but Fuse must not divide by zero if
			// called directly: it falls back to vector only.
			name: "both weights 0 means vector only",
			vw:   0, bw: 0,
			vec:  []engine.SearchResult{vecHit("v", 0.8, 0.75)},
			bm25: []engine.SearchResult{bmHit("b", 0.9)},
			want: map[string]float64{"v": 0.8, "b": 0},
		},
		{
			name: "sorted best first, stable on ties",
			vw:   0.7, bw: 0.3,
			vec:          []engine.SearchResult{vecHit("a", 0.55, 0.18), vecHit("b", 0.9, 0.889), vecHit("c", 0.55, 0.18)},
			bm25:         []engine.SearchResult{bmHit("d", 0.1), bmHit("e", 0.7)},
			want:         map[string]float64{"a": 0.55, "b": 0.9, "c": 0.55, "d": 0.5, "e": 0.7},
			wantOrderIDs: []string{"b", "e", "a", "c", "d"},
		},
		{
			// A backend returning the same row twice must not double it.
			name: "duplicate hits are merged",
			vw:   0.7, bw: 0.3,
			vec:  []engine.SearchResult{vecHit("x", 0.6, 1/3.0), vecHit("x", 0.99, 0.99)},
			bm25: []engine.SearchResult{bmHit("x", 0.4), bmHit("x", 0.99), bmHit("b", 0.2), bmHit("b", 0.9)},
			want: map[string]float64{"x": 0.6 * 1.15, "b": 0.5},
		},
		{
			name: "no hits",
			vw:   0.7, bw: 0.3,
			want: map[string]float64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(tt.vec, tt.bm25, tt.vw, tt.bw)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d candidates, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, c := range got {
				want, ok := tt.want[c.Memory.ID]
				if !ok {
					t.Fatalf("unexpected candidate %q", c.Memory.ID)
				}
				if !near(c.Score, want) || !near(c.Sources.Fused, want) {
					t.Errorf("%s: score %v, fused %v, want %v", c.Memory.ID, c.Score, c.Sources.Fused, want)
				}
				if i > 0 && got[i-1].Score < c.Score {
					t.Errorf("not sorted: %s (%v) before %s (%v)", got[i-1].Memory.ID, got[i-1].Score, c.Memory.ID, c.Score)
				}
			}
			if tt.wantOrderIDs != nil {
				if ids := candIDs(got); !slices.Equal(ids, tt.wantOrderIDs) {
					t.Errorf("order %v, want %v", ids, tt.wantOrderIDs)
				}
			}
		})
	}
}

// TestFuseSources checks the explanation fields: they are what the API
// shows users when they ask why a memory was recalled.
func TestFuseSources(t *testing.T) {
	got := Fuse(
		[]engine.SearchResult{vecHit("both", 0.6, 1/3.0), vecHit("vec", 0.7, 4/7.0)},
		[]engine.SearchResult{bmHit("both", 0.4), bmHit("bm", 0.8)},
		0.7, 0.3)
	by := map[string]Sources{}
	for _, c := range got {
		by[c.Memory.ID] = c.Sources
	}
	want := map[string]Sources{
		"both": {Vector: 0.6, VectorHit: true, BM25: 0.4, BM25Hit: true, Cosine: 1 / 3.0, Fused: 0.69},
		"vec":  {Vector: 0.7, VectorHit: true, Cosine: 4 / 7.0, Fused: 0.7},
		"bm":   {BM25: 0.8, BM25Hit: true, Fused: 0.8},
	}
	for id, w := range want {
		g := by[id]
		if g.VectorHit != w.VectorHit || g.BM25Hit != w.BM25Hit || !near(g.Vector, w.Vector) ||
			!near(g.BM25, w.BM25) || !near(g.Cosine, w.Cosine) || !near(g.Fused, w.Fused) {
			t.Errorf("%s: sources %+v, want %+v", id, g, w)
		}
	}
}

func candIDs(cs []Candidate) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.Memory.ID
	}
	return ids
}

func scored(scores ...float64) []Candidate {
	cs := make([]Candidate, len(scores))
	for i, s := range scores {
		cs[i] = Candidate{Memory: schemas.Memory{ID: string(rune('a' + i))}, Score: s}
	}
	return cs
}

func TestMinScore(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		min    float64
		want   []string
	}{
		{"keeps equal, drops below", []float64{0.9, 0.35, 0.3499, 0.2}, 0.35, []string{"a", "b"}},
		{"zero keeps all", []float64{0.5, 0, 0.1}, 0, []string{"a", "b", "c"}},
		{"order kept", []float64{0.1, 0.8, 0.05, 0.7}, 0.5, []string{"b", "d"}},
		{"one drops all", []float64{0.99, 0.5}, 1, []string{}},
		{"empty", nil, 0.3, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := candIDs(MinScore(scored(tt.scores...), tt.min)); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecency(t *testing.T) {
	// The seed gives the formula boost = exp(-ageDays/halfLife)·weight and,
	// as its illustration, "14 days → +0.05, 28 days → +0.025". The two
	// disagree (those figures are a true half-life, 2^(-age/halfLife)).
	// clawmem follows the formula, which is also the plugin's code, so a
	// memory 14 days old at the defaults gains 0.1·e⁻¹ ≈ 0.0368, not 0.05.
	tests := []struct {
		name     string
		score    float64
		age      float64 // days; negative: created in the future
		halfLife float64
		weight   float64
		want     float64
	}{
		{"0 days: +weight", 0.5, 0, 14, 0.1, 0.6},
		{"14 days: +0.1/e", 0.5, 14, 14, 0.1, 0.5 + 0.1*math.Exp(-1)},
		{"28 days: +0.1/e²", 0.5, 28, 14, 0.1, 0.5 + 0.1*math.Exp(-2)},
		{"7 days", 0.5, 7, 14, 0.1, 0.5 + 0.1*math.Exp(-0.5)},
		{"a year: almost nothing", 0.5, 365, 14, 0.1, 0.5 + 0.1*math.Exp(-365.0/14)},
		{"clamped to 1", 0.95, 0, 14, 0.1, 1},
		{"future timestamp counts as age 0", 0.5, -3, 14, 0.1, 0.6},
		{"other weight", 0.4, 14, 14, 0.3, 0.4 + 0.3*math.Exp(-1)},
		{"halfLife 0 disables", 0.5, 0, 0, 0.1, 0.5},
		{"weight 0 disables", 0.5, 0, 14, 0, 0.5},
		{"disabled stage does not clamp either", 0.5, 0, 0, 0.1, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := []Candidate{{Memory: schemas.Memory{Timestamp: daysAgo(tt.age)}, Score: tt.score}}
			got := Recency(cs, stageNow, tt.halfLife, tt.weight)[0].Score
			if math.Abs(got-tt.want) > 1e-7 { // ms-granular timestamps
				t.Errorf("score %v, want %v", got, tt.want)
			}
		})
	}
}

func TestImportance(t *testing.T) {
	tests := []struct {
		importance, factor float64
	}{
		{1.0, 1.0},
		{0.7, 0.91},
		{0.5, 0.85},
		{0.0, 0.7},
		{1.5, 1.0}, // clamped into [0,1] first
		{-2, 0.7},
		{math.NaN(), 0.91}, // NaN counts as the default importance, 0.7
	}
	for _, tt := range tests {
		cs := []Candidate{{Memory: schemas.Memory{Importance: tt.importance}, Score: 0.8}}
		if got := Importance(cs)[0].Score; !near(got, 0.8*tt.factor) {
			t.Errorf("importance %v: score %v, want 0.8×%v = %v", tt.importance, got, tt.factor, 0.8*tt.factor)
		}
	}
}

func TestLengthNorm(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		anchor float64
		factor float64
	}{
		{"at the anchor", strings.Repeat("a", 500), 500, 1},
		{"twice the anchor", strings.Repeat("a", 1000), 500, 1 / 1.5},
		{"four times", strings.Repeat("a", 2000), 500, 0.5},
		{"eight times", strings.Repeat("a", 4000), 500, 1 / 2.5},
		{"shorter: no bonus", strings.Repeat("a", 250), 500, 1},
		{"750 chars", strings.Repeat("a", 750), 500, 1 / (1 + 0.5*math.Log2(1.5))},
		{"anchor 0 disables", strings.Repeat("a", 5000), 0, 1},
		// 1000 runes are 3000 bytes; counting bytes would give ×0.436.
		{"counts runes, not bytes", strings.Repeat("记", 1000), 500, 1 / 1.5},
		{"emoji are one rune each", strings.Repeat("🙂", 500), 500, 1},
		{"other anchor", strings.Repeat("a", 1200), 300, 1 / 2.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := []Candidate{{Memory: schemas.Memory{Text: tt.text}, Score: 0.9}}
			if got := LengthNorm(cs, tt.anchor)[0].Score; !near(got, 0.9*tt.factor) {
				t.Errorf("score %v, want 0.9×%v = %v", got, tt.factor, 0.9*tt.factor)
			}
		})
	}
}

func TestTimeDecay(t *testing.T) {
	tests := []struct {
		age, halfLife, factor float64
	}{
		{0, 60, 1},
		{60, 60, 0.5 + 0.5*math.Exp(-1)},  // ≈ 0.684
		{120, 60, 0.5 + 0.5*math.Exp(-2)}, // ≈ 0.568
		{240, 60, 0.5 + 0.5*math.Exp(-4)}, // ≈ 0.509
		{100000, 60, 0.5},                 // floor: never below half
		{-10, 60, 1},                      // future: no decay, no boost
		{30, 30, 0.5 + 0.5*math.Exp(-1)},
		{240, 0, 1}, // halfLife 0 disables
	}
	// The rounded figures the seed and the brief quote, as a cross-check of
	// the exact expressions above.
	for _, r := range []struct{ age, approx float64 }{{60, 0.684}, {120, 0.568}, {240, 0.509}} {
		if f := 0.5 + 0.5*math.Exp(-r.age/60); math.Abs(f-r.approx) > 5e-4 {
			t.Fatalf("sanity: factor at %v days is %v, not ≈%v", r.age, f, r.approx)
		}
	}
	for _, tt := range tests {
		cs := []Candidate{{Memory: schemas.Memory{Timestamp: daysAgo(tt.age)}, Score: 0.8}}
		if got := TimeDecay(cs, stageNow, tt.halfLife)[0].Score; math.Abs(got-0.8*tt.factor) > 1e-7 {
			t.Errorf("age %v d, halfLife %v: score %v, want 0.8×%v = %v", tt.age, tt.halfLife, got, tt.factor, 0.8*tt.factor)
		}
	}
}

// TestPostRerankStagesCompose runs the stages in the pipeline's order on one
// candidate and compares with the product of the seed's factors.
func TestPostRerankStagesCompose(t *testing.T) {
	cs := []Candidate{{Memory: schemas.Memory{Text: strings.Repeat("x", 1000), Importance: 0.5, Timestamp: daysAgo(60)}, Score: 0.6}}
	cs = Recency(cs, stageNow, 14, 0.1)
	cs = Importance(cs)
	cs = LengthNorm(cs, 500)
	cs = TimeDecay(cs, stageNow, 60)
	want := (0.6 + 0.1*math.Exp(-60.0/14)) * 0.85 / 1.5 * (0.5 + 0.5*math.Exp(-1))
	if math.Abs(cs[0].Score-want) > 1e-7 {
		t.Errorf("score %v, want %v", cs[0].Score, want)
	}
}

func TestNoiseFilter(t *testing.T) {
	texts := []string{
		"The deploy key for staging lives in the ops vault",
		"hi",
		"I don't have any information about that",
		"User prefers oolong tea over coffee",
		"Do you remember my birthday?",
		"HEARTBEAT",
		"abc",
		"我最喜欢喝乌龙茶",
	}
	cs := make([]Candidate, len(texts))
	for i, s := range texts {
		cs[i] = Candidate{Memory: schemas.Memory{ID: s, Text: s}, Score: 0.9 - 0.01*float64(i)}
	}
	want := []string{texts[0], texts[3], texts[7]}
	if got := candIDs(NoiseFilter(cs)); !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
}

func TestMMR(t *testing.T) {
	// Unit vectors with chosen cosines to a = (1,0,0).
	a := []float32{1, 0, 0}
	nearA := []float32{0.95, float32(math.Sqrt(1 - 0.95*0.95)), 0}  // cos 0.95
	above := []float32{0.86, 0, float32(math.Sqrt(1 - 0.86*0.86))}  // cos 0.86
	below := []float32{0.84, 0, -float32(math.Sqrt(1 - 0.84*0.84))} // cos 0.84
	b := []float32{0, 1, 0}
	c := []float32{0, 0, 1}
	// nearB is close to nearA (cos ≈ 0.95) but only ≈ 0.81 to a.
	nearB := []float32{0.81, 0.586, 0}
	mem := func(id string, v []float32) Candidate {
		return Candidate{Memory: schemas.Memory{ID: id, Vector: v}}
	}
	tests := []struct {
		name string
		in   []Candidate
		want []string
	}{
		{"distinct: order kept", []Candidate{mem("a", a), mem("b", b), mem("c", c)}, []string{"a", "b", "c"}},
		{"near-duplicate deferred to the end, not dropped",
			[]Candidate{mem("a", a), mem("a2", nearA), mem("b", b), mem("c", c)}, []string{"a", "b", "c", "a2"}},
		{"just above 0.85 deferred", []Candidate{mem("a", a), mem("x", above), mem("b", b)}, []string{"a", "b", "x"}},
		{"just below 0.85 kept in place", []Candidate{mem("a", a), mem("x", below), mem("b", b)}, []string{"a", "x", "b"}},
		{"deferred keep their relative order",
			[]Candidate{mem("a", a), mem("a2", nearA), mem("b", b), mem("a3", above), mem("c", c)},
			[]string{"a", "b", "c", "a2", "a3"}},
		// Only selected candidates count: y is close to the deferred x but
		// not to a, so it stays.
		{"compared with selected only", []Candidate{mem("a", a), mem("x", nearA), mem("y", nearB)}, []string{"a", "y", "x"}},
		{"no vector never deferred", []Candidate{mem("a", a), mem("n", nil), mem("n2", nil)}, []string{"a", "n", "n2"}},
		{"other dimension never deferred", []Candidate{mem("a", a), mem("d", []float32{1, 0})}, []string{"a", "d"}},
		{"identical vectors", []Candidate{mem("a", a), mem("a2", a), mem("a3", a)}, []string{"a", "a2", "a3"}},
		{"empty", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := candIDs(MMR(tt.in)); !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}

// MMRTop(cs, k) is MMR(cs)[:k] for every k, on candidates with many
// near-duplicates (vectors from a few directions with noise).
func TestMMRTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		dirs := make([][]float32, 1+rng.IntN(4))
		for i := range dirs {
			dirs[i] = []float32{rng.Float32() - 0.5, rng.Float32() - 0.5, rng.Float32() - 0.5, rng.Float32() - 0.5}
		}
		cs := make([]Candidate, rng.IntN(30))
		for i := range cs {
			d := dirs[rng.IntN(len(dirs))]
			v := make([]float32, len(d))
			for j := range v {
				v[j] = d[j] + 0.3*(rng.Float32()-0.5)
			}
			if rng.IntN(10) == 0 {
				v = nil
			}
			cs[i] = Candidate{Memory: schemas.Memory{ID: fmt.Sprint(i), Vector: v}}
		}
		all := candIDs(MMR(cs))
		for k := range len(cs) + 2 {
			if got, want := candIDs(MMRTop(cs, k)), all[:min(k, len(all))]; !slices.Equal(got, want) {
				t.Fatalf("k=%d of %d: %v, want %v", k, len(cs), got, want)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		key    string // the config key the error must name
	}{
		{"mode", func(c *Config) { c.Mode = "rrf" }, "retrieval.mode"},
		{"rerank", func(c *Config) { c.Rerank = "cohere" }, "retrieval.rerank"},
		{"vectorWeight", func(c *Config) { c.VectorWeight = 1.5 }, "retrieval.vectorWeight"},
		{"bm25Weight NaN", func(c *Config) { c.BM25Weight = math.NaN() }, "retrieval.bm25Weight"},
		{"minScore", func(c *Config) { c.MinScore = -0.1 }, "retrieval.minScore"},
		{"hardMinScore", func(c *Config) { c.HardMinScore = 2 }, "retrieval.hardMinScore"},
		{"pool", func(c *Config) { c.CandidatePoolSize = 0 }, "retrieval.candidatePoolSize"},
		{"both weights 0", func(c *Config) { c.VectorWeight, c.BM25Weight = 0, 0 }, "both 0"},
		{"fusion", func(c *Config) { c.Fusion = "sum" }, "retrieval.fusion"},
		{"bm25Norm", func(c *Config) { c.BM25Norm = "" }, "retrieval.bm25Norm"},
		{"temporalBoost", func(c *Config) { c.TemporalBoost = 1.5 }, "retrieval.temporalBoost"},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: error %v, want one naming %q", tt.name, err, tt.key)
		}
	}
	// Zeros that disable a stage are valid.
	c := DefaultConfig()
	c.RecencyHalfLifeDays, c.TimeDecayHalfLifeDays, c.LengthNormAnchor, c.HardMinScore, c.MinScore = 0, 0, 0, 0, 0
	if err := c.Validate(); err != nil {
		t.Errorf("disabling stages: %v", err)
	}
}

func TestTemporalBoost(t *testing.T) {
	said := time.Date(2026, 2, 2, 18, 0, 0, 0, time.UTC) // a Monday
	mem := func(id, text string, ts time.Time, meta string) Candidate {
		return Candidate{Memory: schemas.Memory{ID: id, Text: text, Timestamp: ts.UnixMilli(), Metadata: []byte(meta)}, Score: 0.5}
	}
	fresh := func() []Candidate {
		return []Candidate{
			mem("dated", "I had the interview last Thursday", said, ""),
			mem("plain", "The interview was with a design studio", said, ""),
			// Stored with its dates resolved at capture (said a week
			// earlier than its timestamp): those win over the text.
			mem("stored", "We moved the sofa", said, `{"dates":[{"text":"on Saturday","date":"2026-01-24"}]}`),
			mem("march", "Planting the garden", time.Date(2026, 3, 12, 9, 0, 0, 0, time.UTC), ""),
		}
	}
	scores := func(cs []Candidate) map[string]float64 {
		out := map[string]float64{}
		for _, c := range cs {
			out[c.Memory.ID] = c.Score
			if c.Sources.Temporal != (c.Score > 0.5) {
				t.Errorf("%s: Sources.Temporal %v with score %v", c.Memory.ID, c.Sources.Temporal, c.Score)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name, query string
		boost       float64
		want        map[string]float64
	}{
		{"asks when: dated memories lifted", "When was the interview?", 0.1,
			map[string]float64{"dated": 0.55, "plain": 0.5, "stored": 0.55, "march": 0.5}},
		{"asks when in Czech", "Kdy byl pohovor?", 0.2,
			map[string]float64{"dated": 0.6, "plain": 0.5, "stored": 0.6, "march": 0.5}},
		{"names a month: memories said in it", "What did I do in March?", 0.1,
			map[string]float64{"dated": 0.5, "plain": 0.5, "stored": 0.5, "march": 0.55}},
		{"names a day a stored date resolves to", "What happened on 24 January 2026?", 0.1,
			map[string]float64{"dated": 0.5, "plain": 0.5, "stored": 0.55, "march": 0.5}},
		{"names a day a text resolves to", "What happened on 29 January 2026?", 0.1,
			map[string]float64{"dated": 0.55, "plain": 0.5, "stored": 0.5, "march": 0.5}},
		{"neither: nothing moves", "What was the interview about?", 0.1,
			map[string]float64{"dated": 0.5, "plain": 0.5, "stored": 0.5, "march": 0.5}},
		{"boost 0 disables", "When was the interview?", 0,
			map[string]float64{"dated": 0.5, "plain": 0.5, "stored": 0.5, "march": 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scores(TemporalBoost(fresh(), tc.query, stageNow, tc.boost))
			for id, w := range tc.want {
				if !near(got[id], w) {
					t.Errorf("%s: score %v, want %v", id, got[id], w)
				}
			}
		})
	}
	if got := TemporalBoost(nil, "when?", stageNow, 0.1); len(got) != 0 {
		t.Errorf("no candidates: got %v", got)
	}
}

func TestFuseRRF(t *testing.T) {
	vec := []engine.SearchResult{vecHit("a", 0.9, 0.8), vecHit("b", 0.8, 0.6)}
	bm := []engine.SearchResult{bmHit("b", 0.9), bmHit("c", 0.8)}
	got := FuseRRF(vec, bm, 0.7, 0.3)
	score := map[string]float64{}
	for _, c := range got {
		score[c.Memory.ID] = c.Score
		if c.Sources.Fused != c.Score {
			t.Errorf("%s: fused source %v, score %v", c.Memory.ID, c.Sources.Fused, c.Score)
		}
	}
	best := 1.0 / (RRFK + 1)
	want := map[string]float64{
		"a": 0.7 / (RRFK + 1) / best,
		"b": (0.7/(RRFK+2) + 0.3/(RRFK+1)) / best,
		"c": 0.3 / (RRFK + 2) / best,
	}
	for id, w := range want {
		if !near(score[id], w) {
			t.Errorf("%s: %v, want %v", id, score[id], w)
		}
	}
	if got[0].Memory.ID != "b" || len(got) != 3 {
		t.Errorf("order %v, want b first (in both lists)", got)
	}
	// First in both lists scores exactly 1.
	if one := FuseRRF(vec[:1], []engine.SearchResult{bmHit("a", 0.7)}, 0.7, 0.3); !near(one[0].Score, 1) {
		t.Errorf("first in both: %v, want 1", one[0].Score)
	}
}

func TestRelativeBM25(t *testing.T) {
	in := []engine.SearchResult{{Memory: schemas.Memory{ID: "a"}, Score: 0.9, Raw: 8}, {Memory: schemas.Memory{ID: "b"}, Score: 0.8, Raw: 2}}
	got := RelativeBM25(in)
	if !near(got[0].Score, 1) || !near(got[1].Score, 0.25) {
		t.Errorf("relative scores %v, %v; want 1, 0.25", got[0].Score, got[1].Score)
	}
	if in[1].Score != 0.8 {
		t.Error("input modified")
	}
	if got := RelativeBM25(nil); len(got) != 0 {
		t.Error("nil in, something out")
	}
}

// --explain's line ends with what brought a memory in besides its own match.
func TestSourcesString(t *testing.T) {
	base := Sources{Vector: 0.539, VectorHit: true, Fused: 0.706, Reranked: 0.538, Rerank: RerankCosineFallback, Final: 0.58, Cosine: 0.144}
	const head = "vector 0.539  bm25   -    fused 0.706  reranked 0.538 (cosine-fallback)  final 0.580  cosine 0.144"
	for _, tc := range []struct {
		name string
		set  func(*Sources)
		want string
	}{
		{"own match only", func(*Sources) {}, head},
		{"replaced", func(s *Sources) { s.Replaced = "7e2fb9d6-0000-4000-8000-000000000001" }, head + "  replaced 7e2fb9d6"},
		{"neighbour", func(s *Sources) { s.Neighbor = "1aaf679b-0000-4000-8000-000000000002" }, head + "  neighbour of 1aaf679b"},
		{"temporal", func(s *Sources) { s.Temporal = true }, head + "  temporal"},
		{"outdated", func(s *Sources) { s.Outdated = "5c0ffee1-0000-4000-8000-000000000003" }, head + "  outdated by 5c0ffee1"},
		{"a short id is shown whole", func(s *Sources) { s.Replaced = "abc" }, head + "  replaced abc"},
		{"all three", func(s *Sources) {
			s.Replaced, s.Neighbor, s.Temporal = "7e2fb9d6-x", "1aaf679b-y", true
		}, head + "  replaced 7e2fb9d6  neighbour of 1aaf679b  temporal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.set(&s)
			if got := s.String(); got != tc.want {
				t.Errorf("String() =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestOutdated: a newer memory that tells an older one changed trades
// places with it — wherever it was when the rules read the change, when it
// is close behind when only the model did; an older memory that tells the
// change, unrelated memories, questions and another speaker's turns keep
// their places; nothing is dropped.
func TestOutdated(t *testing.T) {
	mem := func(id, text string, ts int64, score float64) Candidate {
		return Candidate{Memory: schemas.Memory{ID: id, Text: text, Timestamp: ts}, Score: score}
	}
	old := "I drive a Corvano sedan"
	change := "Sold the Corvano and got a Hallis EV instead"
	phone, newPhone := "My phone is a Pixel 6", "my phone is an iPhone 16 now" // only the model reads this one
	for _, tc := range []struct {
		name  string
		in    []Candidate
		order []string
		stale string // the candidate marked Outdated, by id
	}{
		{"close behind: the change first", []Candidate{mem("old", old, daysAgo(30), 0.62), mem("run", "I run before work", daysAgo(5), 0.60),
			mem("new", change, daysAgo(2), 0.59)}, []string{"new", "run", "old"}, "old"},
		{"far behind, the rules read it: the change first", []Candidate{mem("old", old, daysAgo(30), 0.80), mem("new", change, daysAgo(2), 0.50)},
			[]string{"new", "old"}, "old"},
		{"close behind, the model reads it: the change first", []Candidate{mem("old", phone, daysAgo(30), 0.62), mem("new", newPhone, daysAgo(2), 0.59)},
			[]string{"new", "old"}, "old"},
		{"far behind, only the model reads it: places kept", []Candidate{mem("old", phone, daysAgo(30), 0.80), mem("new", newPhone, daysAgo(2), 0.50)},
			[]string{"old", "new"}, ""},
		{"the change told first is no successor", []Candidate{mem("old", old, daysAgo(2), 0.62), mem("new", change, daysAgo(30), 0.60)},
			[]string{"old", "new"}, ""},
		{"no change told", []Candidate{mem("a", old, daysAgo(30), 0.62), mem("b", "I washed the Corvano", daysAgo(2), 0.60)},
			[]string{"a", "b"}, ""},
		{"a question tells no change", []Candidate{mem("a", old, daysAgo(30), 0.62), mem("b", "Should I sell the Corvano and get a Hallis EV?", daysAgo(2), 0.60)},
			[]string{"a", "b"}, ""},
		{"another speaker's turn", []Candidate{mem("a", "Tomas: "+old, daysAgo(30), 0.62), mem("b", "Mara: "+change, daysAgo(2), 0.60)},
			[]string{"a", "b"}, ""},
		{"the same speaker's", []Candidate{mem("a", "Tomas: "+old, daysAgo(30), 0.62), mem("b", "Tomas: "+change, daysAgo(2), 0.60)},
			[]string{"b", "a"}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Outdated(slices.Clone(tc.in))
			var ids []string
			for _, c := range out {
				ids = append(ids, c.Memory.ID)
				if (c.Sources.Outdated != "") != (c.Memory.ID == tc.stale) {
					t.Errorf("%s outdated by %q", c.Memory.ID, c.Sources.Outdated)
				}
			}
			if !slices.Equal(ids, tc.order) {
				t.Errorf("order %v, want %v", ids, tc.order)
			}
		})
	}
}

// BenchmarkOutdated: the stage reads the first ten results pairwise on
// every recall: ten facts none of which tells a change (most recalls), and
// ten of which half do.
func BenchmarkOutdated(b *testing.B) {
	for _, bc := range []struct {
		name  string
		texts []string
	}{
		{"plain", []string{"I drive a Corvano sedan", "I run before work", "My sister lives in Vienna", "My phone is a Pixel 6",
			"I prefer window seats on long flights", "Jana: My editor is Harriet Moss", "我养了一只金毛叫豆豆", "Ich wohne in Birkenfelde",
			"저는 강철짐에 다녀요", "Pracuju ve firmě Modrý Mlýn"}},
		{"changes", []string{"I drive a Corvano sedan", "I run before work", "Sold the Corvano and got a Hallis EV instead",
			"My phone is a Pixel 6", "my phone is an iPhone 16 now", "Jana: Harriet emailed. The printer slot moved, so final art is now due 13 March",
			"我养了一只金毛叫豆豆", "豆豆去年走了，今年我们又养了一只柴犬", "Ich wohne in Birkenfelde", "Seit dem Umzug im Sommer sind wir in Lindenhagen zu Hause"}},
	} {
		in := make([]Candidate, len(bc.texts))
		for i, s := range bc.texts {
			in[i] = Candidate{Memory: schemas.Memory{ID: strconv.Itoa(i), Text: s, Timestamp: daysAgo(float64(30 - i))}, Score: 0.9 - float64(i)/20}
		}
		cs := make([]Candidate, len(in))
		// The first time recall meets these texts, and every time after.
		b.Run(bc.name+"/first", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				rules.Forget()
				copy(cs, in)
				b.StartTimer()
				Outdated(cs)
			}
		})
		b.Run(bc.name+"/remembered", func(b *testing.B) {
			for b.Loop() {
				copy(cs, in)
				Outdated(cs)
			}
		})
	}
}

// A question about the asker lowers another person's fact that shares
// its words below the asker's own; a question about someone else, or a
// factor of 1, leaves the order as it was.
func TestWhose(t *testing.T) {
	fresh := func() []Candidate {
		return []Candidate{
			{Memory: schemas.Memory{ID: "brother", Text: "My brother Callum lives in Ashby"}, Score: 0.6},
			{Memory: schemas.Memory{ID: "mine", Text: "We bought a house out in Kelvale, moved in on Saturday"}, Score: 0.5},
		}
	}
	for _, tc := range []struct {
		name, query string
		factor      float64
		first       string
	}{
		{"about the asker", "Where do I live now?", 0.7, "mine"},
		{"about the brother", "Where does my brother live?", 0.7, "brother"},
		{"about someone by name", "Where does Callum live?", 0.7, "brother"},
		{"off", "Where do I live now?", 1, "brother"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Whose(fresh(), tc.query, tc.factor)
			sortByScore(cs)
			if cs[0].Memory.ID != tc.first {
				t.Fatalf("first %q, want %q: %+v", cs[0].Memory.ID, tc.first, cs)
			}
			lowered := cs[0].Memory.ID != "brother" // the only memory naming a relative
			for _, c := range cs {
				if c.Sources.Relative != (lowered && c.Memory.ID == "brother") {
					t.Errorf("%s: Sources.Relative %v", c.Memory.ID, c.Sources.Relative)
				}
			}
			if lowered && !strings.Contains(cs[1].Sources.String(), "another person's") {
				t.Errorf("--explain does not say it was lowered: %s", cs[1].Sources.String())
			}
		})
	}
}

// MatchScore takes back the temporal lift and Whose's lowering, and
// nothing else.
func TestMatchScore(t *testing.T) {
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name string
		c    Candidate
		want float64
	}{
		{"plain", Candidate{Score: 0.5}, 0.5},
		{"lifted", Candidate{Score: 0.5 * (1 + cfg.TemporalBoost), Sources: Sources{Temporal: true}}, 0.5},
		{"lowered", Candidate{Score: 0.5 * cfg.RelativeFactor, Sources: Sources{Relative: true}}, 0.5},
		{"both", Candidate{Score: 0.5 * (1 + cfg.TemporalBoost) * cfg.RelativeFactor, Sources: Sources{Temporal: true, Relative: true}}, 0.5},
	} {
		if got := MatchScore(tc.c, cfg); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: MatchScore = %v, want %v", tc.name, got, tc.want)
		}
	}
}

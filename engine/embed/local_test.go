package embed

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func newTestLocal(t testing.TB, dims int) Embedder {
	t.Helper()
	e, err := New(Config{Provider: ProviderLocal, Dimensions: dims})
	if err != nil {
		t.Fatalf("New local: %v", err)
	}
	return e
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func l2(v []float32) float64 {
	return math.Sqrt(sumSquares(v))
}

func mustEmbed(t *testing.T, e Embedder, text string) []float32 {
	t.Helper()
	v, err := e.EmbedPassage(context.Background(), text)
	if err != nil {
		t.Fatalf("EmbedPassage(%q): %v", text, err)
	}
	return v
}

func TestLocalDefaults(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatalf("New(Config{}): %v", err)
	}
	if e.Model() != "local-lexical" || e.Dimensions() != 384 {
		t.Fatalf("zero config gave model %q with %d dimensions, want local-lexical/384", e.Model(), e.Dimensions())
	}
	if _, ok := e.(StatsProvider); ok {
		t.Fatal("local embedder should not claim to cache")
	}
	if got := newTestLocal(t, 64).Dimensions(); got != 64 {
		t.Fatalf("Dimensions = %d, want 64", got)
	}
}

func TestLocalRejectsOtherModels(t *testing.T) {
	_, err := New(Config{Provider: "local", Model: "nomic-embed-text"})
	if err == nil || !strings.Contains(err.Error(), "local-lexical") {
		t.Fatalf("error = %v, want one naming local-lexical", err)
	}
}

func TestLocalDeterministicUnitVectors(t *testing.T) {
	e := newTestLocal(t, 0)
	other := newTestLocal(t, 0)
	for _, text := range []string{
		"User prefers oolong tea in the afternoon",
		"我最喜欢喝乌龙茶",
		"日本語のテキストとEnglish mixed 🍵",
		"!!!",
		"\u200b",
		"a",
		"ÉCOLE école",
		"\xff\xfe invalid utf-8",
	} {
		a, b := mustEmbed(t, e, text), mustEmbed(t, other, text)
		if !slices.Equal(a, b) {
			t.Errorf("%q: two embedders disagree", text)
		}
		if len(a) != 384 || math.Abs(l2(a)-1) > 1e-5 {
			t.Errorf("%q: len %d norm %v, want 384 and unit norm", text, len(a), l2(a))
		}
	}
}

func TestLocalCaseInsensitive(t *testing.T) {
	e := newTestLocal(t, 0)
	if !slices.Equal(mustEmbed(t, e, "Oolong TEA"), mustEmbed(t, e, "oolong tea")) {
		t.Fatal("case should not change the vector")
	}
}

func TestLocalSimilarityOrdering(t *testing.T) {
	e := newTestLocal(t, 0)
	tests := []struct {
		name, anchor, near, far string
	}{
		{"shared words", "the user likes oolong tea", "oolong tea is the user's favourite drink", "deploy the service on kubernetes"},
		{"spelling variants", "database migration failed", "databases migrations failing", "weekend hiking plans"},
		{"chinese", "我最喜欢喝乌龙茶", "乌龙茶很好喝", "今天下雨"},
		{"japanese", "東京の天気は晴れです", "東京は晴れ", "猫が好きです"},
		{"emoji", "coffee ☕ every morning", "☕ please", "tax return deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustEmbed(t, e, tt.anchor)
			near, far := cosine(a, mustEmbed(t, e, tt.near)), cosine(a, mustEmbed(t, e, tt.far))
			if near <= far {
				t.Fatalf("cos(near)=%.3f should exceed cos(far)=%.3f", near, far)
			}
			t.Logf("cos(near)=%.3f cos(far)=%.3f", near, far)
		})
	}
}

func TestLocalQueryAndPassageAgree(t *testing.T) {
	e := newTestLocal(t, 0)
	ctx := context.Background()
	q, err := e.EmbedQuery(ctx, "oolong tea")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q, mustEmbed(t, e, "oolong tea")) {
		t.Fatal("lexical query and passage vectors should be identical")
	}
}

func TestLocalEmptyText(t *testing.T) {
	e := newTestLocal(t, 0)
	ctx := context.Background()
	for _, text := range []string{"", " ", "\n\t \u3000"} {
		if _, err := e.EmbedQuery(ctx, text); !errors.Is(err, ErrEmptyText) {
			t.Errorf("EmbedQuery(%q) error = %v, want ErrEmptyText", text, err)
		}
		if _, err := e.EmbedPassage(ctx, text); !errors.Is(err, ErrEmptyText) {
			t.Errorf("EmbedPassage(%q) error = %v, want ErrEmptyText", text, err)
		}
	}
	_, err := e.EmbedPassages(ctx, []string{"fine", "  "})
	if !errors.Is(err, ErrEmptyText) || !strings.Contains(err.Error(), "passage 1") {
		t.Fatalf("EmbedPassages error = %v, want ErrEmptyText naming passage 1", err)
	}
	if err.Error() != "passage 1 of 2: Cannot embed empty text" {
		t.Fatalf("error text = %q", err)
	}
}

func TestLocalEmbedPassagesOrder(t *testing.T) {
	e := newTestLocal(t, 0)
	texts := []string{"alpha", "beta gamma", "乌龙茶", "alpha"}
	vecs, err := e.EmbedPassages(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], mustEmbed(t, e, text)) {
			t.Errorf("vector %d does not match %q", i, text)
		}
	}
	vecs[0][0] = 42
	if vecs[3][0] == 42 {
		t.Fatal("duplicate texts must not share a backing array")
	}
}

func TestLocalHonoursCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newTestLocal(t, 0).EmbedPassages(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestLocalTest(t *testing.T) {
	got := newTestLocal(t, 128).Test(context.Background())
	if got != (TestResult{Success: true, Dimensions: 128}) {
		t.Fatalf("Test() = %+v", got)
	}
}

func TestLocalZeroNormFallback(t *testing.T) {
	l := newLocal(8)
	// Two features in one bucket with opposite signs cancel exactly.
	var pos, neg uint64
	for h := uint64(0); pos == 0 || neg == 0; h++ {
		f := feature(kindWord, h)
		if (f>>kindBits&0xffffffff)%8 != 0 {
			continue
		}
		if f>>63 == 0 && pos == 0 {
			pos = f
		} else if f>>63 == 1 && neg == 0 {
			neg = f
		}
	}
	feats := []uint64{min(pos, neg), max(pos, neg)}
	vec := make([]float32, 8)
	l.accumulate(vec, feats, true)
	if sumSquares(vec) != 0 {
		t.Fatalf("setup: signed vector should cancel, got %v", vec)
	}
	l.accumulate(vec, feats, false)
	if vec[0] != 2 {
		t.Fatalf("unsigned accumulation = %v, want 2 in bucket 0", vec)
	}
}

func FuzzLocalEmbed(f *testing.F) {
	for _, seed := range []string{"", " ", "hello world", "我最喜欢喝乌龙茶", "!!!", "\x00", "\xff", "a b a b a b", "🍵🍵", "\u200b\u200c"} {
		f.Add(seed)
	}
	e := newLocal(96)
	f.Fuzz(func(t *testing.T, text string) {
		vec, err := e.EmbedPassage(context.Background(), text)
		if err != nil {
			if !errors.Is(err, ErrEmptyText) || !isBlank(text) {
				t.Fatalf("EmbedPassage(%q) error: %v", text, err)
			}
			return
		}
		if len(vec) != 96 {
			t.Fatalf("len = %d, want 96", len(vec))
		}
		if n := l2(vec); math.IsNaN(n) || math.Abs(n-1) > 1e-4 {
			t.Fatalf("EmbedPassage(%q) norm = %v, want 1", text, n)
		}
	})
}

var benchTexts = []string{
	"User prefers oolong tea over coffee in the afternoon",
	"The staging database runs PostgreSQL 16 on port 5433",
	"Remember to rotate the API keys every ninety days",
	"我最喜欢喝乌龙茶，尤其是下午",
	"Meeting with Alice moved to Thursday at 3pm",
	"The deploy script lives in deploy/release.sh",
	"Bob is allergic to peanuts 🥜",
	"Use pnpm instead of npm in the frontend repo",
}

func BenchmarkLocalEmbedShort(b *testing.B) {
	e := newLocal(defaultLocalDims)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.embed(benchTexts[i%len(benchTexts)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
}

func BenchmarkLocalEmbedLong(b *testing.B) {
	e := newLocal(defaultLocalDims)
	long := strings.Repeat(strings.Join(benchTexts, ". ")+" ", 3) // ~1.2 KB
	b.SetBytes(int64(len(long)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.embed(long); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
}

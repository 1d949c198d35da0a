package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRemoteCache(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	e := newTestRemote(t, cfg)
	stats := e.(StatsProvider)
	ctx := context.Background()

	first, err := e.EmbedQuery(ctx, "tea")
	if err != nil {
		t.Fatal(err)
	}
	first[0] = 123 // must not leak into the cache
	second, err := e.EmbedQuery(ctx, "tea")
	if err != nil {
		t.Fatal(err)
	}
	if f.count() != 1 {
		t.Fatalf("cache hit still called the server: %d requests", f.count())
	}
	if !slices.Equal(second, fakeVector("tea", testDims)) {
		t.Fatal("cached vector was modified through a returned slice")
	}
	// No tasks configured: a passage of the same text is the same request.
	if _, err := e.EmbedPassage(ctx, "tea"); err != nil {
		t.Fatal(err)
	}
	if f.count() != 1 {
		t.Fatalf("passage with the same (empty) task missed the cache: %d requests", f.count())
	}
	got := stats.CacheStats()
	if got.Size != 1 || got.Hits != 2 || got.Misses != 1 || got.HitRate < 0.66 || got.HitRate > 0.67 {
		t.Fatalf("CacheStats = %+v, want size 1, 2 hits, 1 miss", got)
	}
}

func TestRemoteCacheSeparatesTasks(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.TaskQuery, cfg.TaskPassage = "retrieval.query", "retrieval.passage"
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	for _, embed := range []func(context.Context, string) ([]float32, error){e.EmbedQuery, e.EmbedPassage, e.EmbedQuery, e.EmbedPassage} {
		if _, err := embed(ctx, "tea"); err != nil {
			t.Fatal(err)
		}
	}
	if f.count() != 2 {
		t.Fatalf("%d requests, want one per task", f.count())
	}
	if got := e.(StatsProvider).CacheStats(); got.Size != 2 || got.Hits != 2 {
		t.Fatalf("CacheStats = %+v, want 2 entries and 2 hits", got)
	}
}

func TestRemoteCacheTTL(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.CacheTTL = 50 * time.Millisecond
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	for range 2 {
		if _, err := e.EmbedQuery(ctx, "tea"); err != nil {
			t.Fatal(err)
		}
	}
	if f.count() != 1 {
		t.Fatalf("%d requests before expiry, want 1", f.count())
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := e.EmbedQuery(ctx, "tea"); err != nil {
		t.Fatal(err)
	}
	if f.count() != 2 {
		t.Fatalf("%d requests after expiry, want 2", f.count())
	}
}

func TestRemoteCacheLRUEviction(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.CacheSize = 2
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	embed := func(text string) {
		t.Helper()
		if _, err := e.EmbedQuery(ctx, text); err != nil {
			t.Fatal(err)
		}
	}
	embed("a")
	embed("b")
	embed("a") // hit; b is now least recently used
	embed("c") // evicts b
	if f.count() != 3 {
		t.Fatalf("%d requests, want 3", f.count())
	}
	embed("a")
	if f.count() != 3 {
		t.Fatal("recently used entry was evicted")
	}
	embed("b")
	if f.count() != 4 {
		t.Fatal("least recently used entry was not evicted")
	}
	if got := e.(StatsProvider).CacheStats().Size; got != 2 {
		t.Fatalf("cache size %d, want 2", got)
	}
}

func TestCacheKey(t *testing.T) {
	k := cacheKey("retrieval.query", "tea")
	if len(k) != 24 || strings.Trim(k, "0123456789abcdef") != "" {
		t.Fatalf("cacheKey = %q, want 24 lower-case hex chars", k)
	}
	if k != cacheKeyReference("retrieval.query:tea") {
		t.Fatalf("cacheKey = %q, want %q", k, cacheKeyReference("retrieval.query:tea"))
	}
	if cacheKey("", "tea") == cacheKey("retrieval.passage", "tea") {
		t.Fatal("tasks must separate cache entries")
	}
}

// cacheKeyReference is the key definition written the obvious way.
func cacheKeyReference(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:24]
}

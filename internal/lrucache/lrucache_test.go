package lrucache

import (
	"testing"
	"time"
)

func TestCountsHitsAndMisses(t *testing.T) {
	c := New[string, int](2, time.Minute)
	if _, ok := c.Get("a", nil); ok {
		t.Fatal("an empty cache had a")
	}
	c.Add("a", 1)
	if v, ok := c.Get("a", nil); !ok || v != 1 {
		t.Fatalf("a: %d %v", v, ok)
	}
	if _, ok := c.Get("a", func(v int) bool { return v == 2 }); ok {
		t.Fatal("a value usable refused was served")
	}
	c.Add("b", 2)
	c.Add("c", 3) // evicts a, the least recently used
	if _, ok := c.Get("a", nil); ok {
		t.Fatal("a outlived the cache's size")
	}
	want := Stats{Size: 2, Hits: 1, Misses: 3, HitRate: 0.25}
	if got := c.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
}

func TestEntriesExpire(t *testing.T) {
	c := New[string, int](4, 200*time.Millisecond) // the library's cleaner wakes every TTL/100
	c.Add("a", 1)
	time.Sleep(450 * time.Millisecond)
	if _, ok := c.Get("a", nil); ok {
		t.Fatal("an entry outlived its TTL")
	}
}

package sqlitestore

import (
	"context"
	"errors"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/storetest"
	"github.com/clawmem/clawmem/engine/vecindex"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string, dim int) (engine.Store, error) {
		return Open(context.Background(), dir, Options{Dimensions: dim})
	})
}

func TestConformanceApproximate(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string, dim int) (engine.Store, error) {
		return Open(context.Background(), dir, Options{Dimensions: dim, Index: vecindex.Options{Mode: vecindex.IVF}})
	})
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), dir, Options{Dimensions: 4}); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second open: want ErrLocked, got %v", err)
	}
	s.Close()
	s2, err := Open(context.Background(), dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

func TestNewStoreNeedsDimensions(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), dir, Options{}); err == nil {
		t.Fatal("a new store opened without dimensions")
	}
	s, err := Open(context.Background(), dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(context.Background(), dir, Options{})
	if err != nil || s.Dimensions() != 4 {
		t.Fatalf("reopen adopting stored dimensions: %v", err)
	}
	s.Close()
}

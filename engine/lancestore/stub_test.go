//go:build !lancedb

package lancestore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestWithoutTheTagOpenSaysHowToBuild(t *testing.T) {
	if s, err := Open(context.Background(), t.TempDir(), Options{Dimensions: 4}); s != nil || !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Open = %v, %v; want ErrNotBuilt", s, err)
	}
	if src, err := OpenLegacy(context.Background(), t.TempDir()); src != nil || !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("OpenLegacy = %v, %v; want ErrNotBuilt", src, err)
	}
	if !strings.Contains(ErrNotBuilt.Error(), "-tags lancedb") {
		t.Fatalf("the error must say how to build: %v", ErrNotBuilt)
	}
}

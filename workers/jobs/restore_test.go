package jobs

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

func TestRestoreReportWriteText(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  RestoreReport
		want string
	}{
		{"every line new", RestoreReport{Lines: 3, Expected: 3, Restored: 3, VectorsKept: 1, Embedded: 2},
			"restored f.jsonl\nexpected 3 memories, restored 3 (1 vectors from the file, 2 embedded)\n"},
		{"repeated ids", RestoreReport{Lines: 5, Duplicates: 2, Expected: 3, Restored: 3, Embedded: 3},
			"restored f.jsonl\nexpected 3 memories, restored 3 (0 vectors from the file, 3 embedded, 2 repeated ids skipped)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.rep.WriteText(&b, "f.jsonl")
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	src := backupStore(t, testDims)
	seeded := seedMemories(t, src, 600)
	job, err := NewBackup(src, nil, BackupConfig{Dir: t.TempDir(), WithVectors: true, Now: newDayClock().now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := job.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file                  BackupFile
		wantKept, wantEmbeded int
	}{
		{res.Files[0], 0, 600}, // backup: re-embedded
		{res.Files[1], 600, 0}, // snapshot: vectors kept
	}
	for _, c := range cases {
		t.Run(c.file.Kind, func(t *testing.T) {
			dst := backupStore(t, testDims)
			f, err := os.Open(c.file.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var calls, last int
			rep, err := Restore(context.Background(), dst, testkit.LocalEmbedder(t, testDims), f, func(done, total int) { calls++; last = done })
			if err != nil {
				t.Fatal(err)
			}
			if rep.Expected != 600 || rep.Restored != 600 || rep.Lines != 600 || rep.VectorsKept != c.wantKept || rep.Embedded != c.wantEmbeded {
				t.Fatalf("report %+v", rep)
			}
			if calls != 3 || last != 600 {
				t.Fatalf("progress called %d times, last %d", calls, last)
			}
			for _, want := range []schemas.Memory{seeded[0], seeded[299], seeded[599]} {
				got, err := dst.Get(context.Background(), want.ID, engine.AllScopes())
				if err != nil {
					t.Fatal(err)
				}
				if got.Text != want.Text || got.Timestamp != want.Timestamp || got.Scope != want.Scope || got.Category != want.Category ||
					got.Importance != want.Importance || string(got.Metadata) != string(want.Metadata) {
					t.Fatalf("restored %+v\nwant %+v", got, want)
				}
				// The local embedder is deterministic: re-embedding gives
				// the same vectors the snapshot carried.
				if !slices.Equal(got.Vector, want.Vector) {
					t.Fatal("vector differs after restore")
				}
			}
			hits, err := dst.TextSearch(context.Background(), "docker compose", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 3})
			if err != nil || len(hits) != 3 {
				t.Fatalf("restored store not searchable: %v %v", hits, err)
			}
		})
	}
}

func TestRestoreRefusesNonEmptyStore(t *testing.T) {
	dst := backupStore(t, testDims)
	seedMemories(t, dst, 1)
	line := `{"id":"` + uuid.NewString() + `","text":"hello there","category":"fact","scope":"global","importance":0.5,"timestamp":1}` + "\n"
	_, err := Restore(context.Background(), dst, testkit.LocalEmbedder(t, testDims), strings.NewReader(line), nil)
	if !errors.Is(err, ErrStoreNotEmpty) {
		t.Fatalf("err %v, want ErrStoreNotEmpty", err)
	}
	if st, _ := dst.Stats(context.Background(), engine.AllScopes()); st.Total != 1 {
		t.Fatalf("store now holds %d", st.Total)
	}
}

func TestRestoreChecksTheWholeFileFirst(t *testing.T) {
	id := uuid.NewString()
	good := `{"id":"` + id + `","text":"I prefer oolong tea","category":"preference","scope":"agent:main","importance":0.7,"timestamp":1700000000000,"metadata":{}}`
	cases := []struct {
		name, file string
		wantErr    string
		want       RestoreReport
	}{
		{"bad json", good + "\n{not json\n", "line 2", RestoreReport{}},
		{"bad id", good + "\n" + strings.Replace(good, id, "not-a-uuid", 1) + "\n", "not a UUID", RestoreReport{}},
		{"bad category", good + "\n" + strings.Replace(strings.Replace(good, "preference", "mood", 1), id, uuid.NewString(), 1), "category", RestoreReport{}},
		{"duplicate id and blank lines", good + "\n\n" + good + "\n", "", RestoreReport{Lines: 2, Duplicates: 1, Expected: 1, Restored: 1, Embedded: 1}},
		{"empty file", "", "", RestoreReport{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := backupStore(t, testDims)
			rep, err := Restore(context.Background(), dst, testkit.LocalEmbedder(t, testDims), strings.NewReader(c.file), nil)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, schemas.ErrInvalid) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				if st, _ := dst.Stats(context.Background(), engine.AllScopes()); st.Total != 0 {
					t.Fatalf("a refused file wrote %d memories", st.Total)
				}
				return
			}
			if err != nil || rep != c.want {
				t.Fatalf("report %+v %v, want %+v", rep, err, c.want)
			}
		})
	}
}

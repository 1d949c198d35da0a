package rules

import (
	"path/filepath"
	"sync"
	"testing"
)

// gistOfText is ReadGist's gist of text.
func gistOfText(text string) Gist {
	g, _ := ReadGist(text)
	return g
}

// pairTablePaths are the replace model's training pair tables.
func pairTablePaths(t *testing.T) []string {
	paths, err := filepath.Glob(filepath.Join(factTables, "pairs_train*.tsv"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no pair tables: %v", err)
	}
	return paths
}

// writtenPairs are the pair tables' lines, as their writers wrote them.
func writtenPairs(t *testing.T) []replacePair {
	var out []replacePair
	for _, path := range pairTablePaths(t) {
		out = append(out, readPairTable(t, path)...)
	}
	return out
}

// TestGistNecessary: on every written pair the replace model is trained
// on (every second under the race detector), both ways round, without
// speakers' labels and with one to three kinds of them by turns (the
// same, two people's, one only), a pair the gists turn away is one
// ReplacesBy turns away too; and the gists turn away most of
// the pairs that replace nothing, or they would save recall nothing.
func TestGistNecessary(t *testing.T) {
	pairs := writtenPairs(t)
	labels := [][2]string{{"", ""}, {"Jana: ", "Jana: "}, {"Jana: ", "Petr: "}, {"", "Jana: "}}
	var replacing, nothing, turnedAway int
	for k, p := range pairs {
		if raceEnabled && k%2 != 0 {
			continue
		}
		for _, l := range labels[:1+k%len(labels)] {
			for _, pair := range [][2]string{{l[0] + p.newer, l[1] + p.older}, {l[0] + p.older, l[1] + p.newer}} {
				newer, older := pair[0], pair[1]
				by := ReadStatement(newer).ReplacesBy(ReadStatement(older))
				may := gistOfText(newer).MayReplace(gistOfText(older))
				if by != "" {
					replacing++
					if !may {
						t.Fatalf("the gists turn away %q replacing %q (%s)", newer, older, by)
					}
					continue
				}
				nothing++
				if !may {
					turnedAway++
				}
			}
		}
	}
	t.Logf("%d pairs replace, %d do not, and the gists turn away %d of those", replacing, nothing, turnedAway)
	if replacing == 0 || turnedAway*2 < nothing {
		t.Fatalf("the gists turn away %d of %d pairs that replace nothing (%d replace)", turnedAway, nothing, replacing)
	}
}

// TestReadGistRemembers: a text's gist and whether it is noise are the same
// read fresh, remembered, from many goroutines at once, read in either
// order, and after another text took their slot.
func TestReadGistRemembers(t *testing.T) {
	texts := []string{"Sold the Corvano and got a Hallis EV instead", "I drive a Corvano sedan", "Did I ever sell the Corvano?",
		"Jana: My editor is Harriet Moss", "Mein Bruder geht jeden Sonntag angeln", "", "\xff\xfe", "ok", "HEARTBEAT ok"}
	want := make([]Gist, len(texts))
	noise := make([]bool, len(texts))
	for i, s := range texts {
		want[i], noise[i] = gistOf(ReadStatement(s)), IsNoise(s)
		if want[i]&gistRead == 0 || want[i]&^gistBits != 0 {
			t.Fatalf("gist of %q has no read bit, or a noise bit: %b", s, want[i])
		}
	}
	if noise[0] || !noise[7] || !noise[8] {
		t.Fatalf("IsNoise of the texts: %v", noise)
	}
	check := func(i int, s string, noiseFirst bool) {
		if noiseFirst {
			if got := NoiseOf(s); got != noise[i] {
				t.Errorf("NoiseOf(%q) = %v, want %v", s, got, noise[i])
			}
		}
		if got := gistOfText(s); got != want[i] {
			t.Errorf("ReadGist(%q) = %b, want %b", s, got, want[i])
		}
		// Remembered: no statement is read.
		if got, read := ReadGist(s); got != want[i] || read != nil {
			t.Errorf("ReadGist(%q) = %b, %v; want %b and nothing read", s, got, read, want[i])
		}
		if got := NoiseOf(s); got != noise[i] {
			t.Errorf("NoiseOf(%q) = %v, want %v", s, got, noise[i])
		}
	}
	if !want[0].MayReplace(want[1]) || want[1].MayReplace(want[0]) || want[2].MayReplace(want[1]) || want[0].MayReplace(want[2]) {
		t.Fatalf("gists %b %b %b: a change, its older fact and a question read wrong", want[0], want[1], want[2])
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				for i, s := range texts {
					check(i, s, i%2 == 0)
				}
			}
		})
	}
	wg.Wait()
	// Fill the table past its size: every text's slot is taken again.
	for i := range 2 * gistSlots {
		gistOfText(string(rune('a'+i%26)) + string(rune(i)))
	}
	for i, s := range texts {
		check(i, s, i%2 == 1)
	}
}

// TestReplacesByOf: a pair's verdict is ReplacesBy's, read once and then
// remembered, each way round apart, from many goroutines at once.
func TestReplacesByOf(t *testing.T) {
	pairs := writtenPairs(t)
	if n := map[bool]int{false: 3000, true: 600}[raceEnabled]; len(pairs) > n {
		pairs = pairs[:n]
	}
	verdict := func(newer, older string) string { return ReadStatement(newer).ReplacesBy(ReadStatement(older)) }
	replacing := 0
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k, p := range pairs {
				if k%4 != g && k%3 != 0 {
					continue
				}
				for _, pair := range [][2]string{{p.newer, p.older}, {p.older, p.newer}} {
					want := verdict(pair[0], pair[1])
					for range 2 {
						if got := ReplacesByOf(pair[0], pair[1], func() string { return verdict(pair[0], pair[1]) }); got != want {
							t.Errorf("ReplacesByOf(%q, %q) = %q, want %q", pair[0], pair[1], got, want)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	// Remembered: the second asking does not read the pair again.
	for _, p := range pairs {
		want := verdict(p.newer, p.older)
		if want != "" {
			replacing++
		}
		ReplacesByOf(p.newer, p.older, func() string { return want })
		if got := ReplacesByOf(p.newer, p.older, func() string { t.Fatalf("%q, %q read again", p.newer, p.older); return "" }); got != want {
			t.Fatalf("remembered %q, want %q", got, want)
		}
	}
	if replacing == 0 {
		t.Fatal("no pair replaces: the test compares only empty verdicts")
	}
}

// ReadGist hands on the statement it read, the first time only.
func TestReadGist(t *testing.T) {
	Forget()
	text := "Sold the Corvano and got a Hallis EV instead"
	g, read := ReadGist(text)
	if read == nil || read.orig != text || g != gistOf(ReadStatement(text)) {
		t.Fatalf("first reading: %b, %+v", g, read)
	}
	if g2, again := ReadGist(text); g2 != g || again != nil {
		t.Fatalf("second reading: %b, %+v", g2, again)
	}
}

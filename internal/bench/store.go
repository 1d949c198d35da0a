package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// StoreOptions are `clawmem bench store`'s settings.
type StoreOptions struct {
	N, Dim, Queries int
	// Extra memories are inserted after N to measure insert throughput.
	Extra int
	// Dir is the store directory (a temporary one when empty).
	Dir       string
	SkipIndex bool
	// OpenCommand runs OpenOnce in a fresh process and prints its report
	// as JSON (clawmem's hidden `bench store-open`); --dir and --dim are
	// appended.
	OpenCommand []string
	// Progress receives the index benchmark's progress; Logf the phases.
	Progress io.Writer
	Logf     func(format string, args ...any)
}

// StoreReport is what `clawmem bench store` reports.
type StoreReport struct {
	Index      vecindex.BenchReport `json:"index"`
	ExactRatio [2]float64           `json:"exactRatioToFloorP50P99"`
	Inserted   int                  `json:"inserted"`
	LoadRate   float64              `json:"loadPerSecond"`
	InsertRate float64              `json:"insertPerSecondAtN"`
	Open       OpenReport           `json:"open"`
	// OpenDatabase is the cold open without the segment: every vector
	// decoded from the database (what a crash leaves the next open).
	OpenDatabase OpenReport `json:"openFromDatabase"`
	RawVectorMB  float64    `json:"rawVectorMB"`
	RSSLimitMB   float64    `json:"rssLimitMB"`
	// Changes compares with a baseline run (--baseline), when given.
	Changes []Change `json:"baseline,omitempty"`
}

// OpenReport is what the child process measuring a cold open reports.
type OpenReport struct {
	OpenSeconds float64 `json:"openSeconds"`
	From        string  `json:"from"` // where the vectors came from: segment or database
	Memories    int     `json:"memories"`
	RSSMB       float64 `json:"RSSMB"`
	PeakRSSMB   float64 `json:"peakRssMB"`
	SearchP50ms float64 `json:"storeSearchP50ms"`
}

// Store measures the vector index, the store's writes and a cold open.
func Store(ctx context.Context, o StoreOptions) (StoreReport, error) {
	var rep StoreReport
	logf := o.Logf
	if !o.SkipIndex {
		logf("index: %d x %d, %d queries...", o.N, o.Dim, o.Queries)
		ir, err := vecindex.RunBench(o.N, o.Dim, o.Queries, o.Progress)
		if err != nil {
			return rep, err
		}
		rep.Index = ir
		rep.ExactRatio = [2]float64{ratio(ir.ExactP50, ir.FloorP50), ratio(ir.ExactP99, ir.FloorP50)}
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "clawmem-bench-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := storeWrites(ctx, dir, o.N, o.Dim, o.Extra, &rep, logf); err != nil {
		return rep, err
	}
	// The writes' heap goes back to the OS now, not while the child opens:
	// the returning would compete with the child's page faults.
	debug.FreeOSMemory()
	logf("store: cold open in a fresh process, from the vector segment...")
	open, err := coldOpen(ctx, o.OpenCommand, dir, o.Dim)
	if err != nil {
		return rep, err
	}
	rep.Open = open
	logf("store: cold open in a fresh process, from the database...")
	if rep.OpenDatabase, err = coldOpen(ctx, append(slices.Clone(o.OpenCommand), "--no-segment"), dir, o.Dim); err != nil {
		return rep, err
	}
	rep.RawVectorMB = float64(rep.Inserted) * float64(o.Dim) * 4 / (1 << 20)
	rep.RSSLimitMB = 1.5*rep.RawVectorMB + 150
	return rep, nil
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// batch is the writer's batch size, as the store worker batches.
const batch = 500

var words = strings.Fields(`docker compose server deploy port config database backup user prefers dark mode
tea coffee meeting monday project deadline python golang rust kubernetes cluster token api key editor vim emacs
invoice customer email phone birthday travel flight hotel budget report review release bug fix test build cache`)

// Memories makes count deterministic memories starting at offset.
func Memories(rng *rand.Rand, offset, count, dim int) []schemas.Memory {
	out := make([]schemas.Memory, count)
	for i := range out {
		words := make([]string, 8)
		for j := range words {
			words[j] = words[rng.IntN(len(words))]
		}
		v := make([]float32, dim)
		var norm float64
		for j := range v {
			x := rng.NormFloat64()
			v[j] = float32(x)
			norm += x * x
		}
		inv := float32(1 / math.Sqrt(norm))
		for j := range v {
			v[j] *= inv
		}
		out[i] = schemas.Memory{
			Text:       fmt.Sprintf("memory %d: %s", offset+i, strings.Join(words, " ")),
			Vector:     v,
			Category:   schemas.Categories[rng.IntN(5)],
			Scope:      []string{"global", "agent:main", "agent:ops"}[rng.IntN(3)],
			Importance: 0.7,
		}
	}
	return out
}

func storeWrites(ctx context.Context, dir string, n, dim, extra int, rep *StoreReport, logf func(string, ...any)) error {
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim})
	if err != nil {
		return err
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	have := s.Len()
	start := time.Now()
	for have < n {
		batch := min(batch, n-have)
		if _, err := s.Add(ctx, Memories(rng, have, batch, dim)...); err != nil {
			return err
		}
		have += batch
		if have%20_000 == 0 {
			logf("store: loaded %d", have)
		}
	}
	if el := time.Since(start); have > 0 && el > 0 {
		rep.LoadRate = float64(n) / el.Seconds()
	}
	start = time.Now()
	for done := 0; done < extra; done += batch {
		if _, err := s.Add(ctx, Memories(rng, have+done, min(batch, extra-done), dim)...); err != nil {
			return err
		}
	}
	if extra > 0 {
		rep.InsertRate = float64(extra) / time.Since(start).Seconds()
	}
	rep.Inserted = s.Len()
	return nil
}

// coldOpen measures opening the store in a fresh process, so its RSS is the
// store's and not the benchmark's.
func coldOpen(ctx context.Context, command []string, dir string, dim int) (OpenReport, error) {
	var rep OpenReport
	if len(command) == 0 {
		return rep, errors.New("cold open: no command to run it")
	}
	args := append(slices.Clone(command[1:]), "--dir", dir, "--dim", strconv.Itoa(dim))
	out, err := exec.CommandContext(ctx, command[0], args...).Output()
	if err != nil {
		return rep, fmt.Errorf("cold open: %w", err)
	}
	return rep, json.Unmarshal(out, &rep)
}

// OpenOnce opens the store in dir, as a fresh process does, and measures
// the open, the RSS after it and exact searches.
func OpenOnce(ctx context.Context, dir string, dim int, noSegment bool) (OpenReport, error) {
	var rep OpenReport
	start := time.Now()
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim, NoSegment: noSegment})
	if err != nil {
		return rep, err
	}
	// Closed without writing a segment when opened without one: the next
	// open then loads from the database too.
	defer s.Close()
	rep = OpenReport{OpenSeconds: time.Since(start).Seconds(), Memories: s.Len(), From: s.Vectors().From}
	runtime.GC()
	rep.RSSMB, rep.PeakRSSMB = RSSMB()
	rng := rand.New(rand.NewPCG(3, 4))
	var lat []time.Duration
	for i := 0; i < 50; i++ {
		q := Memories(rng, 0, 1, dim)[0].Vector
		t0 := time.Now()
		if _, err := s.VectorSearch(ctx, q, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10}); err != nil {
			return rep, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	rep.SearchP50ms = Ms(lat[len(lat)/2])
	return rep, nil
}

// RSSMB reads the current and peak resident set size from /proc.
func RSSMB() (cur, peak float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			cur = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return cur, peak
}

// WriteText prints the figures for a person (without the index's when
// skipIndex).
func (r StoreReport) WriteText(w io.Writer, skipIndex bool) error {
	ms := Ms
	if !skipIndex {
		ir := r.Index
		fmt.Fprintf(w, "vector index, %d x %d\n", ir.N, ir.Dim)
		fmt.Fprintf(w, "  memory floor (stream matrix once)  p50 %8.2f ms\n", ms(ir.FloorP50))
		fmt.Fprintf(w, "  exact top-10                       p50 %8.2f ms (%.2fx floor)  p99 %8.2f ms (%.2fx floor)\n",
			ms(ir.ExactP50), r.ExactRatio[0], ms(ir.ExactP99), r.ExactRatio[1])
		fmt.Fprintf(w, "  approximate (IVF) top-10           p50 %8.2f ms  p99 %8.2f ms  recall@10 %.4f  build %.1f s\n",
			ms(ir.IVFP50), ms(ir.IVFP99), ir.IVFRecall10, ir.IVFBuild.Seconds())
	}
	fmt.Fprintf(w, "store (sqlite), %d memories\n", r.Inserted)
	fmt.Fprintf(w, "  bulk load                          %8.0f memories/s\n", r.LoadRate)
	fmt.Fprintf(w, "  insert at N (batched writer)       %8.0f memories/s\n", r.InsertRate)
	fmt.Fprintf(w, "  cold open (load all vectors)       %8.2f s from the %s; %.2f s from the %s\n",
		r.Open.OpenSeconds, r.Open.From, r.OpenDatabase.OpenSeconds, r.OpenDatabase.From)
	fmt.Fprintf(w, "  RSS after open                     %8.0f MB (peak %.0f MB; limit 1.5 x %.0f MB raw + 150 = %.0f MB)\n",
		r.Open.RSSMB, r.Open.PeakRSSMB, r.RawVectorMB, r.RSSLimitMB)
	fmt.Fprintf(w, "  store vector search (exact)        p50 %8.2f ms\n", r.Open.SearchP50ms)
	writeChanges(w, r.Changes)
	return nil
}

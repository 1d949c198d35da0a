package bench

import (
	"cmp"
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
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/internal/testkit"
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
	Index      IndexReport `json:"index"`
	ExactRatio [2]float64  `json:"exactRatioToFloorP50P99"`
	Inserted   int         `json:"inserted"`
	LoadRate   float64     `json:"loadPerSecond"`
	InsertRate float64     `json:"insertPerSecondAtN"`
	Open       OpenReport  `json:"open"`
	// OpenDatabase is the cold open without the segment: every vector
	// decoded from the database (what a crash leaves the next open).
	OpenDatabase OpenReport `json:"openFromDatabase"`
	// IVFTrainSeconds is the approximate index's training in the
	// background of an open (searches exact meanwhile) with the float32
	// mode's bit codes, Int8TrainSeconds with the int8 mode's codes;
	// OpenIVF and OpenInt8 are cold opens of the approximate index, its
	// clustering saved in the segment, in the float32 and int8 modes.
	IVFTrainSeconds  float64    `json:"ivfTrainSeconds"`
	Int8TrainSeconds float64    `json:"int8TrainSeconds"`
	OpenIVF          OpenReport `json:"openIVF"`
	OpenInt8         OpenReport `json:"openInt8"`
	RawVectorMB      float64    `json:"rawVectorMB"`
	// RSSLimitMB is the float32 mode's bound (1.1 × the vectors + 200
	// MB), Int8RSSLimitMB the int8 mode's (0.35 × + 200 MB).
	RSSLimitMB     float64 `json:"rssLimitMB"`
	Int8RSSLimitMB float64 `json:"int8RssLimitMB"`
	// Changes compares with a baseline run (--baseline), when given.
	Changes []Change `json:"baseline,omitempty"`
}

// OpenReport is what the child process measuring a cold open reports.
type OpenReport struct {
	Index       string  `json:"index"` // exact, ivf (float32) or int8
	OpenSeconds float64 `json:"openSeconds"`
	From        string  `json:"from"` // where the vectors came from: segment or database
	Memories    int     `json:"memories"`
	RSSMB       float64 `json:"RSSMB"`
	PeakRSSMB   float64 `json:"peakRssMB"`
	SearchP50ms float64 `json:"storeSearchP50ms"`
	// From the start of the open to the first exact answer, and to the
	// first approximate one (the clustering loaded or trained).
	FirstExactSeconds float64 `json:"firstExactSeconds"`
	FirstIVFSeconds   float64 `json:"firstIVFSeconds,omitempty"`
	// Resident memory after the open and after the approximate queries,
	// split into anonymous (heap) and file-backed (mapped segment) pages.
	Mem        MemUse `json:"mem"`
	QueriedMem MemUse `json:"queriedMem"`
	// Approximate top-10 through the store (rows read from SQLite
	// included), and its recall against the exact top-10.
	IVFP50ms float64 `json:"storeIvfP50ms,omitempty"`
	IVFP99ms float64 `json:"storeIvfP99ms,omitempty"`
	Recall10 float64 `json:"storeRecall10,omitempty"`
	// A whole hybrid retrieval (approximate vector search, BM25, fusion,
	// the default stages; no cross-encoder) of eight words and a vector.
	HybridP50ms float64 `json:"hybridP50ms,omitempty"`
	HybridP99ms float64 `json:"hybridP99ms,omitempty"`
}

// MemUse is a process's resident memory in MB, and its peak.
type MemUse struct {
	RSS, Anon, File, Peak float64
}

// Store measures the vector index, the store's writes and a cold open.
func Store(ctx context.Context, o StoreOptions) (StoreReport, error) {
	var rep StoreReport
	logf := o.Logf
	if !o.SkipIndex {
		logf("index: %d x %d, %d queries...", o.N, o.Dim, o.Queries)
		ir, err := indexBench(o.N, o.Dim, o.Queries, o.Progress)
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
	logf("store: approximate index: an open trains it in the background...")
	if rep.IVFTrainSeconds, err = trainIVF(ctx, dir, o.Dim, vecindex.Float32); err != nil {
		return rep, err
	}
	debug.FreeOSMemory()
	logf("store: cold open of the approximate index (float32), its clustering in the segment...")
	if rep.OpenIVF, err = coldOpen(ctx, append(slices.Clone(o.OpenCommand), "--index", "ivf"), dir, o.Dim); err != nil {
		return rep, err
	}
	// The int8 mode keeps int8 codes, not the float32 mode's bits: a
	// store switched to it trains them once, as here.
	logf("store: approximate index in the int8 memory mode: an open trains its int8 codes...")
	if rep.Int8TrainSeconds, err = trainIVF(ctx, dir, o.Dim, vecindex.Int8); err != nil {
		return rep, err
	}
	debug.FreeOSMemory()
	logf("store: cold open of the approximate index (int8 memory mode)...")
	if rep.OpenInt8, err = coldOpen(ctx, append(slices.Clone(o.OpenCommand), "--index", "int8"), dir, o.Dim); err != nil {
		return rep, err
	}
	rep.RawVectorMB = float64(rep.Inserted) * float64(o.Dim) * 4 / (1 << 20)
	rep.RSSLimitMB = 1.1*rep.RawVectorMB + 200
	rep.Int8RSSLimitMB = 0.35*rep.RawVectorMB + 200
	return rep, nil
}

// indexOptions are the store's index options for a bench mode.
func indexOptions(mode string) (vecindex.Options, error) {
	switch mode {
	case "", "exact":
		return vecindex.Options{}, nil
	case "ivf":
		return vecindex.Options{Mode: vecindex.IVF}, nil
	case "int8":
		return vecindex.Options{Mode: vecindex.IVF, Memory: vecindex.Int8}, nil
	}
	return vecindex.Options{}, fmt.Errorf("index %q: want exact, ivf or int8", mode)
}

// trainIVF opens the store with the approximate index, waits for its
// training and closes it, which saves the clustering in the segment.
func trainIVF(ctx context.Context, dir string, dim int, mem vecindex.Memory) (float64, error) {
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim, Index: vecindex.Options{Mode: vecindex.IVF, Memory: mem}})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	s.WaitIndex()
	took := time.Since(start).Seconds()
	return took, s.Close()
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
		ws := make([]string, 8)
		for j := range ws {
			ws[j] = words[rng.IntN(len(words))]
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
			Text:       fmt.Sprintf("memory %d: %s", offset+i, strings.Join(ws, " ")),
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
	gen := newClustered(dim)
	memories := func(offset, count int) []schemas.Memory {
		ms := Memories(rng, offset, count, dim)
		for i := range ms {
			ms[i].Vector = gen.vector(rng)
		}
		return ms
	}
	have := s.Len()
	start := time.Now()
	for have < n {
		batch := min(batch, n-have)
		if _, err := s.Add(ctx, memories(have, batch)...); err != nil {
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
		if _, err := s.Add(ctx, memories(have+done, min(batch, extra-done))...); err != nil {
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

// exactProbes makes a search through an approximate index exact.
const exactProbes = math.MaxInt32

// OpenOnce opens the store in dir, as a fresh process does, with the
// index of mode (exact, ivf or int8), and measures the open, the first
// exact and approximate answers, resident memory, and searches.
func OpenOnce(ctx context.Context, dir string, dim int, noSegment bool, mode string) (OpenReport, error) {
	rep := OpenReport{Index: cmp.Or(mode, "exact")}
	io, err := indexOptions(mode)
	if err != nil {
		return rep, err
	}
	start := time.Now()
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim, NoSegment: noSegment, Index: io})
	if err != nil {
		return rep, err
	}
	// Closed without writing a segment when opened without one: the next
	// open then loads from the database too.
	defer s.Close()
	rep.OpenSeconds, rep.Memories, rep.From = time.Since(start).Seconds(), s.Len(), s.Vectors().From
	gen := newClustered(dim)
	rng := rand.New(rand.NewPCG(3, 4))
	search := func(q []float32, probes int) ([]engine.SearchResult, error) {
		return s.VectorSearch(ctx, q, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10, Probes: probes})
	}
	int8Mode := io.Memory == vecindex.Int8
	if !int8Mode {
		if _, err := search(gen.vector(rng), exactProbes); err != nil {
			return rep, err
		}
		rep.FirstExactSeconds = time.Since(start).Seconds()
	}
	if io.Mode == vecindex.IVF {
		s.WaitIndex()
		if _, err := search(gen.vector(rng), 0); err != nil {
			return rep, err
		}
		rep.FirstIVFSeconds = time.Since(start).Seconds()
	}
	runtime.GC()
	rep.Mem = memUse()
	rep.RSSMB, rep.PeakRSSMB = rep.Mem.RSS, rep.Mem.Peak
	qs := make([][]float32, 200)
	for i := range qs {
		qs[i] = gen.vector(rng)
	}
	var approx [][]engine.SearchResult
	if io.Mode == vecindex.IVF {
		// Approximate first: in int8 mode the exact scans below read
		// every mapped vector, which the approximate ones must not.
		var lat []time.Duration
		for _, q := range qs {
			t0 := time.Now()
			res, err := search(q, 0)
			if err != nil {
				return rep, err
			}
			lat = append(lat, time.Since(t0))
			approx = append(approx, res)
		}
		rep.QueriedMem = memUse()
		rep.IVFP50ms, rep.IVFP99ms = Ms(testkit.Percentile(lat, 0.5)), Ms(testkit.Percentile(lat, 0.99))
		if rep.HybridP50ms, rep.HybridP99ms, err = hybrid(ctx, s, qs, rng); err != nil {
			return rep, err
		}
	}
	var lat []time.Duration
	found, want := 0, 0
	for i, q := range qs {
		if i == 50 && approx == nil {
			break
		}
		t0 := time.Now()
		res, err := search(q, exactProbes)
		if err != nil {
			return rep, err
		}
		lat = append(lat, time.Since(t0))
		if i == 0 && int8Mode {
			// The int8 mode's first exact scan is timed here, after the
			// memory figures it would spoil (it reads every vector in):
			// the time to the first exact answer is the open's plus it.
			rep.FirstExactSeconds = rep.OpenSeconds + lat[0].Seconds()
		}
		if approx != nil {
			want += len(res)
			for _, r := range res {
				if slices.ContainsFunc(approx[i], func(a engine.SearchResult) bool { return a.Memory.ID == r.Memory.ID }) {
					found++
				}
			}
		}
	}
	rep.SearchP50ms = Ms(testkit.Percentile(lat, 0.5))
	if want > 0 {
		rep.Recall10 = float64(found) / float64(want)
	}
	return rep, nil
}

// hybrid times a whole retrieval per query: the vector with a text of
// eight of the memories' words.
func hybrid(ctx context.Context, s *sqlitestore.Store, qs [][]float32, rng *rand.Rand) (p50, p99 float64, err error) {
	r, err := retrieve.New(s, retrieve.DefaultConfig())
	if err != nil {
		return 0, 0, err
	}
	var lat []time.Duration
	for _, q := range qs {
		text := make([]string, 8)
		for i := range text {
			text[i] = words[rng.IntN(len(words))]
		}
		t0 := time.Now()
		if _, err := r.Retrieve(ctx, retrieve.Query{Text: strings.Join(text, " "), Vector: q, Scopes: engine.AllScopes(), Limit: 5}); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return Ms(testkit.Percentile(lat, 0.5)), Ms(testkit.Percentile(lat, 0.99)), nil
}

// memUse reads this process's resident memory by kind, and its peak, from /proc.
func memUse() MemUse {
	var m MemUse
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb / 1024
		case "VmHWM:":
			m.Peak = kb / 1024
		case "RssAnon:":
			m.Anon = kb / 1024
		case "RssFile:", "RssShmem:":
			m.File += kb / 1024
		}
	}
	return m
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
	fmt.Fprintf(w, "  RSS after open                     %8.0f MB (peak %.0f MB; float32 limit 1.1 x %.0f MB raw + 200 = %.0f MB)\n",
		r.Open.RSSMB, r.Open.PeakRSSMB, r.RawVectorMB, r.RSSLimitMB)
	fmt.Fprintf(w, "  store vector search (exact)        p50 %8.2f ms\n", r.Open.SearchP50ms)
	fmt.Fprintf(w, "  approximate index trained in       %8.1f s with bit codes (float32 mode), %.1f s with int8 codes (int8 mode), in the background of an open\n", r.IVFTrainSeconds, r.Int8TrainSeconds)
	for _, o := range []struct {
		name  string
		rep   OpenReport
		limit float64
	}{{"approximate, float32", r.OpenIVF, r.RSSLimitMB}, {"approximate, int8 memory", r.OpenInt8, r.Int8RSSLimitMB}} {
		fmt.Fprintf(w, "  cold open, %-24s first exact answer %.2f s, first approximate %.2f s (from the %s)\n",
			o.name, o.rep.FirstExactSeconds, o.rep.FirstIVFSeconds, o.rep.From)
		fmt.Fprintf(w, "    RSS after open %.0f MB (anon %.0f, file %.0f); after %s queries %.0f MB (anon %.0f, file %.0f); limit %.0f MB\n",
			o.rep.Mem.RSS, o.rep.Mem.Anon, o.rep.Mem.File, "200", o.rep.QueriedMem.RSS, o.rep.QueriedMem.Anon, o.rep.QueriedMem.File, o.limit)
		fmt.Fprintf(w, "    store approximate top-10 p50 %.2f ms p99 %.2f ms, recall@10 %.4f; exact p50 %.2f ms\n",
			o.rep.IVFP50ms, o.rep.IVFP99ms, o.rep.Recall10, o.rep.SearchP50ms)
		fmt.Fprintf(w, "    hybrid retrieval (vector + BM25 + fusion)  p50 %.2f ms p99 %.2f ms\n", o.rep.HybridP50ms, o.rep.HybridP99ms)
	}
	writeChanges(w, r.Changes)
	return nil
}

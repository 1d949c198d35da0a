package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
)

// StreamSize is one stream's contents.
type StreamSize struct {
	Msgs  uint64 `json:"msgs"`
	Bytes uint64 `json:"bytes"`
}

// Streams reads the size of clawmem's streams and of its KV buckets
// (streams named KV_<bucket>).
func Streams(ctx context.Context, nc *nats.Conn) (map[string]StreamSize, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	names := []string{"KV_" + schemas.BucketCursors, "KV_" + schemas.BucketWatch, "KV_" + schemas.BucketDistill, "KV_" + schemas.BucketLeases}
	for _, sc := range topology.Streams(topology.Config{}) {
		names = append(names, sc.Name)
	}
	out := map[string]StreamSize{}
	for _, name := range names {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("stream %s: %w", name, err)
		}
		si := s.CachedInfo()
		out[name] = StreamSize{Msgs: si.State.Msgs, Bytes: si.State.Bytes}
	}
	return out, nil
}

// DLQCount is the number of messages in the dead-letter stream.
func DLQCount(ctx context.Context, nc *nats.Conn) (int, error) {
	s, err := Streams(ctx, nc)
	return int(s[schemas.StreamDLQ].Msgs), err
}

// Proc is a process's resources at one moment.
type Proc struct {
	RSSMB float64 `json:"rssMB"`
	// AnonMB and FileMB split the resident memory: anonymous pages (the
	// Go heap, SQLite's page cache, the vector matrix, stacks) and pages
	// of mapped files (the binary, a vector segment).
	AnonMB float64 `json:"anonMB"`
	FileMB float64 `json:"fileMB"`
	// HeapMB is the Go heap in use; IdleMB its spans in no use that the
	// runtime has not yet given back to the kernel (they count in RSS);
	// GoSysMB all the runtime got from the kernel.
	HeapMB     float64 `json:"heapMB"`
	IdleMB     float64 `json:"idleMB"`
	GoSysMB    float64 `json:"goSysMB"`
	Goroutines int     `json:"goroutines"`
	OpenFiles  int     `json:"openFiles"`
}

// ReadProc reads pid's resident memory and open files from /proc, and
// its goroutines and Go memory from the Prometheus metrics its hook
// ingest serves.
func ReadProc(pid int, metricsURL string) (Proc, error) {
	var p Proc
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return p, err
	}
	kb := func(v string) float64 {
		n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		return n / 1024
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "VmRSS":
			p.RSSMB = kb(v)
		case "RssAnon":
			p.AnonMB = kb(v)
		case "RssFile":
			p.FileMB = kb(v)
		}
	}
	f.Close()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return p, err
	}
	p.OpenFiles = len(fds)
	g, err := gauges(metricsURL, "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_sys_bytes")
	mb := func(name string) float64 { return g[name] / (1 << 20) }
	p.Goroutines = int(g["go_goroutines"])
	p.HeapMB = mb("go_memstats_heap_inuse_bytes")
	p.IdleMB = mb("go_memstats_heap_idle_bytes") - mb("go_memstats_heap_released_bytes")
	p.GoSysMB = mb("go_memstats_sys_bytes")
	return p, err
}

// gauges reads unlabelled gauges from a Prometheus text page.
func gauges(url string, names ...string) (map[string]float64, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return map[string]float64{}, err
	}
	defer resp.Body.Close()
	return parseGauges(resp.Body, names...)
}

// parseGauges reads the named unlabelled samples of a Prometheus text
// page; a name absent, or with a value that is not a number, is left out.
func parseGauges(r io.Reader, names ...string) (map[string]float64, error) {
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}

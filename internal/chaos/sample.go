package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
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
	RSSMB      float64 `json:"rssMB"`
	HeapMB     float64 `json:"heapMB"` // Go heap in use
	Goroutines int     `json:"goroutines"`
	OpenFiles  int     `json:"openFiles"`
}

// ReadProc reads pid's resident memory and open files from /proc, and
// its goroutines from the Prometheus metrics its hook ingest serves.
func ReadProc(pid int, metricsURL string) (Proc, error) {
	var p Proc
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return p, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			p.RSSMB = kb / 1024
		}
	}
	f.Close()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return p, err
	}
	p.OpenFiles = len(fds)
	var heap int
	p.Goroutines, heap, err = metrics(metricsURL, "go_goroutines", "go_memstats_heap_inuse_bytes")
	p.HeapMB = float64(heap) / (1 << 20)
	return p, err
}

// metrics reads two unlabelled gauges from a Prometheus text page.
func metrics(url, a, b string) (int, int, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var va, vb float64
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), a+" "); ok {
			va, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if v, ok := strings.CutPrefix(sc.Text(), b+" "); ok {
			vb, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return int(va), int(vb), sc.Err()
}

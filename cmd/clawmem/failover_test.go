package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
)

// startWriter runs `clawmem worker store` in a subprocess on its own data
// dir against url.
func startWriter(t *testing.T, url string) (*exec.Cmd, string, *testkit.Buffer) {
	t.Helper()
	dir := t.TempDir()
	// A short lease (the default is 15 s) keeps the failover quick; the
	// test waits for it with a margin.
	cfg := fmt.Sprintf(`{"nats":{"url":%q,"leaseTTL":"5s"},"watch":{"enabled":false}}`, url)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	cmd := exec.Command(clawmemBinary(t), "worker", "store", "--data-dir", dir)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, dir, logs
}

// TestWriterFailover runs two writers, which share the partitions out, and
// SIGKILLs one in the middle of ingest: the other takes its partitions
// over within the lease's TTL, every acknowledged event becomes exactly
// one memory in the log, and a near-duplicate sent during the failover is
// stored once.
func TestWriterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clawmem processes")
	}
	const total = 2000
	srv, _, js := natsembed.StartTest(t)
	url := srv.ClientURL()
	a, aDir, aLogs := startWriter(t, url)
	ctx := context.Background()
	// held counts the partitions each writer (by data dir) holds.
	held := func() map[string]int {
		out := map[string]int{}
		kv, err := js.KeyValue(ctx, schemas.BucketLeases)
		if err != nil {
			return out
		}
		for p := range schemas.DefaultPartitions {
			e, err := kv.Get(ctx, schemas.LeaseKey(p))
			if err != nil {
				continue
			}
			var v struct{ Holder string }
			json.Unmarshal(e.Value(), &v)
			out[v.Holder]++
		}
		return out
	}
	idOf := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "writer-id"))
		return strings.TrimSpace(string(b))
	}
	waitUntil(t, 30*time.Second, func() error {
		if h := held(); h[idOf(aDir)] != schemas.DefaultPartitions {
			return fmt.Errorf("partitions held %v, want all by the first writer\n%s", h, aLogs.String())
		}
		return nil
	})
	// A second writer: the two share the partitions out.
	_, bDir, bLogs := startWriter(t, url)
	waitUntil(t, 30*time.Second, func() error {
		if h := held(); h[idOf(aDir)] != schemas.DefaultPartitions/2 || h[idOf(bDir)] != schemas.DefaultPartitions/2 {
			return fmt.Errorf("partitions held %v, want half each\n%s\n%s", h, aLogs.String(), bLogs.String())
		}
		return nil
	})

	// Capture in this process: it is stateless and not under test.
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URL = url
	cctx, stopCapture := context.WithCancel(ctx)
	captured := make(chan error, 1)
	go func() {
		captured <- node.Run(cctx, cfg, node.Options{Roles: []string{node.RoleCapture}, Log: slog.New(slog.DiscardHandler)})
	}()
	defer func() { stopCapture(); <-captured }()

	rng := rand.New(rand.NewPCG(4, 2))
	texts := make([]string, total)
	for i := range texts {
		texts[i] = "Remember that " + testkit.Sentence(rng, i)
	}
	pub := producers.New(js)
	// Eight agents, so both writers have work.
	agentOf := func(i int) string { return fmt.Sprintf("agent%d", i%8) }
	send := func(i int, session, text string) {
		ev, _ := json.Marshal(schemas.AgentEndEvent{Success: true, Messages: []schemas.Message{{Role: "user", Content: jsonString(text)}}})
		meta := producers.Meta{SessionKey: session, Timestamp: int64(1_700_000_000_000 + i)}
		for attempt := 0; ; attempt++ {
			if _, err := pub.Publish(ctx, schemas.KindAgentEnd, agentOf(i), ev, meta); err == nil {
				return
			} else if attempt == 50 {
				t.Errorf("event %d not acknowledged: %v", i, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	var sent atomic.Int64
	var killedAt time.Time
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				send(i, fmt.Sprintf("agent:%s:s%d", agentOf(i), i), texts[i])
				sent.Add(1)
			}
		})
	}
	for i := range total {
		if killedAt.IsZero() && sent.Load() >= total/3 {
			a.Process.Signal(syscall.SIGKILL)
			a.Wait()
			killedAt = time.Now()
			// A near-duplicate of an event already sent, by the same
			// agent in another session, while half the partitions have
			// no writer.
			send(total*8, "agent:agent0:dup", texts[0])
		}
		work <- i
	}
	close(work)
	wg.Wait()

	waitUntil(t, 10*time.Second, func() error {
		if h := held(); h[idOf(bDir)] != schemas.DefaultPartitions {
			return fmt.Errorf("partitions held %v %v after the kill, want all by the survivor\n%s", h, time.Since(killedAt), bLogs.String())
		}
		return nil
	})
	t.Logf("the surviving writer holds every partition %v after the kill", time.Since(killedAt).Round(time.Millisecond))

	// The log is the truth: rebuild from it until every event is in.
	dim, err := storeopen.Dimensions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var seen map[string]int
	waitUntil(t, 2*time.Minute, func() error {
		st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{Dimensions: dim, NoChangeLog: true})
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := memlog.Rebuild(ctx, js, st, nil); err != nil {
			return err
		}
		seen = map[string]int{}
		st.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
			seen[m.Text]++
			return nil
		})
		if len(seen) < total {
			return fmt.Errorf("%d of %d memories in the log", len(seen), total)
		}
		return nil
	})
	for i, text := range texts {
		if seen[text] != 1 {
			t.Errorf("event %d is %d times in the log", i, seen[text])
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct memories in the log, want %d", len(seen), total)
	}
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// captureRun measures the store stage with writers separate `clawmem
// worker store` processes (binary) sharing the partitions: it waits until
// they hold every partition between them, queues items memory candidates
// for 64 agents on the work stream, and times them into the memory log.
// Each run starts from an empty log and work stream.
func captureRun(ctx context.Context, js jetstream.JetStream, urls, binary, dir string, writers, items, replicas int, logf func(string, ...any)) (float64, error) {
	for _, name := range []string{schemas.StreamMemories, schemas.StreamWork} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return 0, err
		}
		if err := s.Purge(ctx); err != nil {
			return 0, err
		}
	}
	kv, err := js.KeyValue(ctx, schemas.BucketLeases)
	if err != nil {
		return 0, err
	}
	cfg := fmt.Sprintf(`{"nats":{"url":%q,"replicas":%d},"watch":{"enabled":false},"autoRecall":false,
"jobs":{"backup":{"schedule":"off"},"consolidate":{"schedule":"off"}},"distill":{"schedule":"off"}}`, urls, replicas)
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(os.Interrupt)
			_ = p.Wait()
		}
	}()
	for i := range writers {
		wdir := filepath.Join(dir, fmt.Sprintf("writers%d-%d", writers, i))
		if err := os.MkdirAll(wdir, 0o700); err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(wdir, "config.json"), []byte(cfg), 0o600); err != nil {
			return 0, err
		}
		p := exec.CommandContext(ctx, binary, "worker", "store", "--data-dir", wdir)
		log, err := os.Create(filepath.Join(wdir, "log.txt"))
		if err != nil {
			return 0, err
		}
		defer log.Close()
		p.Stdout, p.Stderr = log, log
		if err := p.Start(); err != nil {
			return 0, err
		}
		procs = append(procs, p)
	}
	// Every partition held, shared evenly.
	want := (schemas.DefaultPartitions + writers - 1) / writers
	deadline := time.Now().Add(time.Minute)
	for {
		held := map[string]int{}
		for p := range schemas.DefaultPartitions {
			if e, err := kv.Get(ctx, schemas.LeaseKey(p)); err == nil {
				var v struct{ Holder string }
				_ = json.Unmarshal(e.Value(), &v)
				held[v.Holder]++
			}
		}
		total, even := 0, len(held) == writers
		for _, n := range held {
			total += n
			even = even && n <= want
		}
		if total == schemas.DefaultPartitions && even {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d writers did not share the partitions out within a minute: %v; the first one's log:\n%s", writers, held, tail(filepath.Join(dir, fmt.Sprintf("writers%d-0", writers), "log.txt")))
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf("capture with %d writer process(es): %d candidates...", writers, items)
	rng := rand.New(rand.NewPCG(uint64(writers), 9))
	const perBatch = 16
	start := time.Now()
	var futures []jetstream.PubAckFuture
	for done := 0; done < items; done += perBatch {
		agent := "agent" + strconv.Itoa(done/perBatch%64)
		b := schemas.WorkBatch{V: schemas.Version, AgentID: agent, Source: "bench"}
		for i := done; i < min(done+perBatch, items); i++ {
			b.Items = append(b.Items, schemas.CaptureItem{SourceID: strconv.Itoa(i), Text: "Remember that " + testkit.Sentence(rng, i),
				Importance: 0.7, Dedup: 0.95, Category: schemas.CategoryFact})
		}
		body, _ := json.Marshal(b)
		msg := nats.NewMsg(schemas.WorkItemSubject(schemas.WorkCandidates, agent, schemas.DefaultPartitions))
		msg.Data = body
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			return 0, err
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	s, err := js.Stream(ctx, schemas.StreamMemories)
	if err != nil {
		return 0, err
	}
	deadline = time.Now().Add(5 * time.Minute)
	for {
		info, err := s.Info(ctx)
		if err != nil {
			return 0, err
		}
		if int(info.State.Msgs) >= items {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d memories in the log after 5 minutes; the first writer's log:\n%s", info.State.Msgs, items, tail(filepath.Join(dir, fmt.Sprintf("writers%d-0", writers), "log.txt")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return float64(items) / time.Since(start).Seconds(), nil
}

// tail is the end of a log file, for an error.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	return string(b[max(0, len(b)-4000):])
}

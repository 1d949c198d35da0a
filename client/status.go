package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/textutil"
	"github.com/clawmem/clawmem/schemas"
)

// Status is a deployment's state as `clawmem status` shows it: which
// writer holds which partitions, how far the memory log is, and each query
// service instance with its lag.
type Status struct {
	Writers     []Writer   `json:"writers"` // by identity
	LogSeq      uint64     `json:"logSeq"`
	LogMessages uint64     `json:"logMessages"`
	LogBytes    uint64     `json:"logBytes"`
	DeadLetters int        `json:"deadLetters"`
	Instances   []Instance `json:"instances"`
	// Consumers is every pipeline stage's durable consumer with its lag.
	Consumers []Consumer `json:"consumers"`
}

// Consumer is one durable consumer of a pipeline stream: Pending
// messages not yet delivered to it, Handling delivered and not yet
// acknowledged, Redelivered delivered more than once.
type Consumer struct {
	Stream      string `json:"stream"`
	Name        string `json:"name"`
	Pending     uint64 `json:"pending"`
	Handling    int    `json:"handling"`
	Redelivered int    `json:"redelivered"`
	// StalledSeconds, when not 0, is how long messages have waited on
	// it with none acknowledged, longer than twice its ack wait: its
	// stage has stopped making progress.
	StalledSeconds int64 `json:"stalledSeconds,omitempty"`
}

// stalledFor is how long a consumer's messages have waited with none
// acknowledged, when that is longer than twice its ack wait (the stages'
// own bound, stage.Config.StallAfter); else 0. The server knows
// its last acknowledgement only since its consumer leader took over:
// before the first, nothing can be told.
func stalledFor(ci *jetstream.ConsumerInfo, now time.Time) time.Duration {
	if ci.NumPending == 0 && ci.NumAckPending == 0 || ci.AckFloor.Last == nil {
		return 0
	}
	if idle := now.Sub(*ci.AckFloor.Last); idle > 2*ci.Config.AckWait {
		return idle
	}
	return 0
}

// Writer is one writer and the partitions whose leases it holds.
type Writer struct {
	ID         string `json:"id"`
	Partitions []int  `json:"partitions"`
}

// Instance is one query service instance.
type Instance struct {
	ID      string `json:"id"`
	Role    string `json:"role"` // writer, replica, or "" (not replicated)
	LogSeq  uint64 `json:"logSeq"`
	Lag     uint64 `json:"lag"` // log entries it has not applied
	Handled uint64 `json:"handled"`
}

// statusWait is how long instances have to answer the stats request.
const statusWait = 500 * time.Millisecond

// Status reads the lease, the log, the dead letters and every query
// service instance's $SRV.STATS.
func (p *NATSPipeline) Status(ctx context.Context) (Status, error) {
	nc, js, err := p.get()
	if err != nil {
		return Status{}, err
	}
	var st Status
	log, err := js.Stream(ctx, schemas.StreamMemories)
	if err != nil {
		return st, fmt.Errorf("memory log: %w", err)
	}
	info, err := log.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("memory log: %w", err)
	}
	st.LogSeq, st.LogMessages, st.LogBytes = info.State.LastSeq, info.State.Msgs, info.State.Bytes
	if st.Writers, err = writers(ctx, js); err != nil {
		return st, err
	}
	if st.DeadLetters, err = p.CountDeadLetters(ctx, ""); err != nil {
		return st, err
	}
	if st.Consumers, err = consumers(ctx, js); err != nil {
		return st, err
	}
	st.Instances, err = instances(nc, st.LogSeq)
	return st, err
}

// consumers lists the pipeline streams' durable consumers, by stream and
// name.
func consumers(ctx context.Context, js jetstream.JetStream) ([]Consumer, error) {
	out := []Consumer{}
	for _, name := range []string{schemas.StreamEvents, schemas.StreamTranscripts, schemas.StreamWork} {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		l := st.ListConsumers(ctx)
		for ci := range l.Info() {
			if ci.Config.Durable == "" {
				continue
			}
			out = append(out, Consumer{Stream: name, Name: ci.Name, Pending: ci.NumPending, Handling: ci.NumAckPending, Redelivered: ci.NumRedelivered,
				StalledSeconds: int64((stalledFor(ci, time.Now()) + time.Second - 1) / time.Second)})
		}
		if err := l.Err(); err != nil {
			return nil, fmt.Errorf("stream %s consumers: %w", name, err)
		}
	}
	// store-2 before store-10: the partitions' consumers in their order.
	slices.SortFunc(out, func(a, b Consumer) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), textutil.NaturalCompare(a.Name, b.Name))
	})
	return out, nil
}

// writers reads every partition's lease.
func writers(ctx context.Context, js jetstream.JetStream) ([]Writer, error) {
	out := []Writer{}
	kv, err := js.KeyValue(ctx, schemas.BucketLeases)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("writers' leases: %w", err)
	}
	keys, err := kv.ListKeysFiltered(ctx, schemas.LeasePrefix+".*")
	if err != nil {
		return nil, fmt.Errorf("writers' leases: %w", err)
	}
	held := map[string][]int{}
	for key := range keys.Keys() {
		p, err := strconv.Atoi(strings.TrimPrefix(key, schemas.LeasePrefix+"."))
		if err != nil {
			continue
		}
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("lease %s: %w", key, err)
		}
		var v struct {
			Holder string `json:"holder"`
		}
		if json.Unmarshal(e.Value(), &v) == nil && v.Holder != "" {
			held[v.Holder] = append(held[v.Holder], p)
		}
	}
	for id, parts := range held {
		slices.Sort(parts)
		out = append(out, Writer{ID: id, Partitions: parts})
	}
	slices.SortFunc(out, func(a, b Writer) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// instances collects every clawmem query service's stats reply.
func instances(nc *nats.Conn, logSeq uint64) ([]Instance, error) {
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.STATS."+schemas.ServiceName, inbox, nil); err != nil {
		return nil, err
	}
	out := []Instance{}
	deadline := time.Now().Add(statusWait)
	for {
		msg, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			break // the wait is over
		}
		var reply struct {
			ID        string `json:"id"`
			Endpoints []struct {
				Data schemas.EndpointStats `json:"data"`
			} `json:"endpoints"`
		}
		if json.Unmarshal(msg.Data, &reply) != nil {
			continue
		}
		in := Instance{ID: reply.ID}
		for _, e := range reply.Endpoints {
			in.Handled += e.Data.Handled
			// Every endpoint of an instance reports its role, and its position
			// as the stats were read: the latest is the furthest.
			in.LogSeq, in.Role = max(in.LogSeq, e.Data.LogSeq), e.Data.Role
		}
		if in.Role != "" && in.LogSeq < logSeq {
			in.Lag = logSeq - in.LogSeq
		}
		out = append(out, in)
	}
	// The writer first, then the replicas, each by id.
	slices.SortFunc(out, func(a, b Instance) int { return cmp.Or(cmp.Compare(b.Role, a.Role), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// partitionList says a sorted list of partitions in ranges: "partitions 0-7, 12".
func partitionList(ps []int) string {
	word := "partitions"
	if len(ps) == 1 {
		word = "partition"
	}
	return word + " " + schemas.PartitionRanges(ps)
}

// WriteText prints the status for a person.
func (st Status) WriteText(w io.Writer) error {
	if len(st.Writers) == 0 {
		fmt.Fprintln(w, "writers:      none holds a partition")
	}
	for _, wr := range st.Writers {
		fmt.Fprintf(w, "writer:       %s holds %s\n", wr.ID, partitionList(wr.Partitions))
	}
	fmt.Fprintf(w, "memory log:   sequence %d, %d memories and deletions, %d bytes\n", st.LogSeq, st.LogMessages, st.LogBytes)
	fmt.Fprintf(w, "dead letters: %d\n", st.DeadLetters)
	for _, c := range st.Consumers {
		if c.StalledSeconds > 0 {
			fmt.Fprintf(w, "stalled:      stage %s (%s): %d messages wait, none acknowledged for %s\n", c.Name, c.Stream,
				c.Pending+uint64(c.Handling), time.Duration(c.StalledSeconds)*time.Second)
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if len(st.Consumers) > 0 {
		fmt.Fprintln(tw, "STAGE CONSUMER\tSTREAM\tPENDING\tHANDLING\tREDELIVERED")
		for _, c := range st.Consumers {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", c.Name, c.Stream, c.Pending, c.Handling, c.Redelivered)
		}
		fmt.Fprintln(tw)
	}
	if len(st.Instances) == 0 {
		fmt.Fprintln(tw, "query services: none answers")
		return tw.Flush()
	}
	fmt.Fprintln(tw, "QUERY SERVICE\tROLE\tLOG SEQ\tLAG\tHANDLED")
	for _, in := range st.Instances {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", in.ID, cmp.Or(in.Role, "-"), in.LogSeq, in.Lag, in.Handled)
	}
	return tw.Flush()
}

package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// Status is a deployment's state as `clawmem status` shows it: who writes,
// how far the memory log is, and each query service instance with its lag.
type Status struct {
	Writer      string     `json:"writer,omitempty"` // the lease holder's identity; "" when none holds it
	WriterSince time.Time  `json:"writerSince,omitzero"`
	LogSeq      uint64     `json:"logSeq"`
	LogMessages uint64     `json:"logMessages"`
	LogBytes    uint64     `json:"logBytes"`
	DeadLetters int        `json:"deadLetters"`
	Instances   []Instance `json:"instances"`
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
func (s *jetStream) Status(ctx context.Context) (Status, error) {
	nc, js, err := s.get()
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
	if kv, err := js.KeyValue(ctx, schemas.BucketLeases); err == nil {
		if e, err := kv.Get(ctx, schemas.LeaseWriter); err == nil {
			var v struct {
				Holder string    `json:"holder"`
				Since  time.Time `json:"since"`
			}
			if json.Unmarshal(e.Value(), &v) == nil {
				st.Writer, st.WriterSince = v.Holder, e.Created()
			}
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return st, fmt.Errorf("writer's lease: %w", err)
		}
	}
	if st.DeadLetters, err = s.CountDeadLetters(ctx, ""); err != nil {
		return st, err
	}
	st.Instances, err = instances(nc, st.LogSeq)
	return st, err
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
				Data struct {
					Handled uint64 `json:"handled"`
					LogSeq  uint64 `json:"log_seq"`
					Role    string `json:"role"`
				} `json:"data"`
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

// WriteText prints the status for a person.
func (st Status) WriteText(w io.Writer) error {
	writer := "none holds the lease"
	if st.Writer != "" {
		writer = fmt.Sprintf("%s (lease renewed %s)", st.Writer, st.WriterSince.Local().Format(time.DateTime))
	}
	fmt.Fprintf(w, "writer:       %s\n", writer)
	fmt.Fprintf(w, "memory log:   sequence %d, %d memories and deletions, %d bytes\n", st.LogSeq, st.LogMessages, st.LogBytes)
	fmt.Fprintf(w, "dead letters: %d\n", st.DeadLetters)
	if len(st.Instances) == 0 {
		_, err := fmt.Fprintln(w, "query services: none answers")
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUERY SERVICE\tROLE\tLOG SEQ\tLAG\tHANDLED")
	for _, in := range st.Instances {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", in.ID, cmp.Or(in.Role, "-"), in.LogSeq, in.Lag, in.Handled)
	}
	return tw.Flush()
}

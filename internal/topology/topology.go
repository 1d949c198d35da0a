// Package topology declares clawmem's JetStream streams and creates them
// idempotently at start-up. Names come from schemas; this is the one place
// their retention and limits are set.
package topology

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/schemas"
)

// Config tunes the streams.
type Config struct {
	EventsMaxAge      time.Duration // default 7 days
	TranscriptsMaxAge time.Duration // default 30 days
	DLQMaxAge         time.Duration // default 30 days
	// DuplicateWindow is how long the events' and transcripts' streams
	// remember a Nats-Msg-Id, so that a hook or watcher retrying a
	// publish whose acknowledgement it lost is stored once; default 10
	// minutes (at least 2).
	DuplicateWindow time.Duration
	Replicas        int // default 1
	// LeaseTTL is how long the writer's lease lasts without a heartbeat:
	// how long a standby waits for a dead writer. Zero keeps an existing
	// bucket's TTL and gives a new one schemas.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Log hears of retries while a cluster is briefly unavailable.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.EventsMaxAge <= 0 {
		c.EventsMaxAge = 7 * 24 * time.Hour
	}
	if c.TranscriptsMaxAge <= 0 {
		c.TranscriptsMaxAge = 30 * 24 * time.Hour
	}
	if c.DLQMaxAge <= 0 {
		c.DLQMaxAge = 30 * 24 * time.Hour
	}
	if c.DuplicateWindow < 2*time.Minute {
		c.DuplicateWindow = 10 * time.Minute
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	return c
}

// internalDuplicateWindow is the work stream's and the memory log's: their
// publishers are clawmem's own stages, whose retries come within seconds,
// and a duplicate that comes later is absorbed anyway (a work item's
// source id is stored once; the memory log keeps one message a memory).
// Each remembered id costs the server memory for the whole window (two a
// stored memory), so it is JetStream's own default, not the events' 10
// minutes.
const internalDuplicateWindow = 2 * time.Minute

// EventsMaxPerKindAgent bounds the events one agent's hooks of one kind
// keep (clawmem.events.<kind>.<agent>), the oldest going first: ten
// million, a week of a very busy agent many times over, and long since
// captured. It also sizes the server's memory: the block a stream is
// writing stays in memory while its consumers read it, and JetStream
// gives a stream with neither MaxBytes nor MaxMsgs 8 MB blocks, unless it
// has a per-subject limit, when it gives 4 MB ones (as for a KV bucket).
// The events stream, read as soon as written by capture and distill, was
// the one 8 MB buffer that grew with the memories (issue 27: +10 MB of
// live heap after about 9,000 events of a soak).
const EventsMaxPerKindAgent = 10_000_000

// Streams returns the stream configurations.
func Streams(c Config) []jetstream.StreamConfig {
	c = c.withDefaults()
	return []jetstream.StreamConfig{
		{
			Name: schemas.StreamEvents, Description: "clawmem hook events",
			Subjects: []string{schemas.EventsSubject}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxAge: c.EventsMaxAge, Duplicates: c.DuplicateWindow, Replicas: c.Replicas, MaxMsgSize: schemas.MaxEventBytes,
			MaxMsgsPerSubject: EventsMaxPerKindAgent,
		},
		{
			Name: schemas.StreamTranscripts, Description: "clawmem session transcripts",
			Subjects: []string{schemas.TranscriptsSubject}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxAge: c.TranscriptsMaxAge, Duplicates: c.DuplicateWindow, Replicas: c.Replicas,
		},
		{
			Name: schemas.StreamWork, Description: "clawmem work between stages",
			Subjects: []string{schemas.WorkSubject}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
			Duplicates: internalDuplicateWindow, Replicas: c.Replicas,
		},
		{
			// One message per memory (its last state or its deletion): a
			// compacted log that rebuilds every store and stays as large
			// as the memories, however often they change.
			Name: schemas.StreamMemories, Description: "clawmem memory log: every memory's last committed state",
			Subjects: []string{schemas.MemoriesSubject}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxMsgsPerSubject: 1, Duplicates: internalDuplicateWindow, Replicas: c.Replicas,
		},
		{
			Name: schemas.StreamDLQ, Description: "clawmem dead letters (see Clawmem-Dlq-* headers)",
			Subjects: []string{schemas.DLQSubject}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			MaxAge: c.DLQMaxAge, Replicas: c.Replicas,
		},
	}
}

// Ensure creates or updates every stream, the KV buckets and the backup
// Object Store.
func Ensure(ctx context.Context, js jetstream.JetStream, c Config) error {
	for _, sc := range Streams(c) {
		if _, err := jsretry.Do(ctx, c.Log, "stream "+sc.Name, func(ctx context.Context) (jetstream.Stream, error) {
			return js.CreateOrUpdateStream(ctx, sc)
		}); err != nil {
			return fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	c = c.withDefaults()
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = schemas.DefaultLeaseTTL
		if kv, err := js.KeyValue(ctx, schemas.BucketLeases); err == nil {
			if st, err := kv.Status(ctx); err == nil && st.TTL() > 0 {
				c.LeaseTTL = st.TTL()
			}
		}
	}
	for _, kv := range []jetstream.KeyValueConfig{
		{Bucket: schemas.BucketCursors, Description: "capture cursors per session", TTL: c.EventsMaxAge * 4},
		// Watch offsets and distill cursors must outlive any stream: losing
		// them re-emits or re-distils whole files.
		{Bucket: schemas.BucketWatch, Description: "session-file watcher offsets per file", History: 1},
		{Bucket: schemas.BucketDistill, Description: "distillation jobs and transcript cursors", History: 1},
		// A lease not renewed within the TTL expires with its key.
		{Bucket: schemas.BucketLeases, Description: "the memory writer's lease", History: 1, TTL: c.LeaseTTL},
	} {
		kv.Storage, kv.Replicas = jetstream.FileStorage, c.Replicas
		if _, err := jsretry.Do(ctx, c.Log, "kv "+kv.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
			return js.CreateOrUpdateKeyValue(ctx, kv)
		}); err != nil {
			return fmt.Errorf("kv %s: %w", kv.Bucket, err)
		}
	}
	// Backup copies; the backup job deletes all but the newest few, so
	// the bucket needs no limits of its own.
	obs := jetstream.ObjectStoreConfig{Bucket: schemas.BucketBackups, Description: "clawmem backup files (JSONL)",
		Storage: jetstream.FileStorage, Replicas: c.Replicas}
	if _, err := jsretry.Do(ctx, c.Log, "object store "+obs.Bucket, func(ctx context.Context) (jetstream.ObjectStore, error) {
		return js.CreateOrUpdateObjectStore(ctx, obs)
	}); err != nil {
		return fmt.Errorf("object store %s: %w", obs.Bucket, err)
	}
	return nil
}

package schemas

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Streams, subjects, consumers and buckets: every NATS name clawmem uses.
// Agent ids are subject tokens, so NATS permissions on these subjects
// decide who may read or write which agent's memories.
const (
	// StreamEvents holds hook events: clawmem.events.<kind>.<agent>.
	StreamEvents  = "CLAWMEM_EVENTS"
	EventsPrefix  = "clawmem.events"
	EventsSubject = EventsPrefix + ".>"

	// StreamTranscripts holds session transcript entries:
	// clawmem.transcript.<agent>.<session>.
	StreamTranscripts  = "CLAWMEM_TRANSCRIPTS"
	TranscriptPrefix   = "clawmem.transcript"
	TranscriptsSubject = TranscriptPrefix + ".>"

	// StreamWork is the work queue between stages:
	// clawmem.work.candidates.<partition>.<agent> and
	// clawmem.work.lessons.<partition>.<agent>, the partition being that
	// of the scope the work writes (ScopePartition), so each partition's
	// writer consumes its own.
	StreamWork     = "CLAWMEM_WORK"
	WorkPrefix     = "clawmem.work"
	WorkSubject    = WorkPrefix + ".>"
	WorkCandidates = WorkPrefix + ".candidates"
	WorkLessons    = WorkPrefix + ".lessons"
	// LegacyWorkCandidates and LegacyWorkLessons match the subjects of
	// work published before partitions (clawmem.work.candidates.<agent>),
	// which a writer moves to their partitions after an upgrade.
	LegacyWorkCandidates = WorkCandidates + ".*"
	LegacyWorkLessons    = WorkLessons + ".*"

	// StreamDLQ keeps messages that exhausted their deliveries:
	// clawmem.dlq.<stage>.<original subject>.
	StreamDLQ  = "CLAWMEM_DLQ"
	DLQPrefix  = "clawmem.dlq"
	DLQSubject = DLQPrefix + ".>"

	// HooksPrefix is where agents hand in hook events, as requests:
	// clawmem.hooks.v1.<agent>.<kind>. Agents never publish to the events
	// stream themselves: clawmem's ingest answers these requests, checks
	// that the event's Msg-Id names the subject's agent and kind, and
	// publishes it, so no agent can claim another's Msg-Id (and suppress
	// its event as a duplicate) or learn the stream's sequence.
	HooksPrefix = "clawmem.hooks.v1"

	// ServicePrefix is the query service: clawmem.v1.<agent>.<op>.
	ServicePrefix  = "clawmem.v1"
	ServiceName    = "clawmem"
	ServiceVersion = "1.0.0"
	// AdminPrefix is the operators' endpoint set: clawmem.admin.v1.<op>,
	// every scope; grant it only to operators.
	AdminPrefix = "clawmem.admin.v1"

	// WriterPrefix and WriterAdminPrefix are the partition writers'
	// endpoints, WriterPrefix.<partition>.<agent>.<op> and
	// WriterAdminPrefix.<partition>.<op> (WriterSubject): query services
	// forward writes there, so a write never lands on a replica. A
	// writer's endpoints are a service of their own, WriterServiceName,
	// which `clawmem status` does not list as query instances.
	WriterPrefix      = "clawmem.writer.v1"
	WriterAdminPrefix = "clawmem.writer.admin.v1"
	WriterServiceName = "clawmem-writer"

	// Durable consumers.
	ConsumerCapture = "capture"
	ConsumerStore   = "store"
	ConsumerDistill = "distill"

	// KV buckets.
	BucketCursors = "clawmem_cursors" // capture: per-session message cursor
	// BucketWatch holds the session-file watcher's byte offset per file.
	BucketWatch = "clawmem_watch"
	// BucketDistill holds distillation jobs (idempotency and status) and
	// the cursor job's per-session transcript cursors.
	BucketDistill = "clawmem_distill"

	// BucketLeases holds the writers' leases, one per partition
	// (LeaseKey): one active writer per partition at a time, another
	// taking over when the lease expires. Each writer also keeps a
	// presence key (PresenceKey), so writers share the partitions out.
	BucketLeases   = "clawmem_leases"
	LeasePrefix    = "writer"
	PresencePrefix = "writers"

	// BucketBackups is the Object Store bucket holding a copy of each
	// backup file, under the file's name.
	BucketBackups = "clawmem_backups"
)

// OpBackup is the admin request (clawmem.admin.v1.backup) that makes the
// store worker's backup job write a backup now. The backup job answers it,
// not the query service, so it is not in Ops.
const OpBackup = "backup"

// OpAuthReload is the admin request (clawmem.admin.v1.auth-reload) that
// makes a `clawmem up` with an embedded server take in the users `clawmem
// agent add|remove` changed.
const OpAuthReload = "auth-reload"

// Service operations, the last token of a service subject.
const (
	OpRecall  = "recall"
	OpContext = "context"
	OpStore   = "store"
	OpForget  = "forget"
	OpUpdate  = "update"
	OpList    = "list"
	OpStats   = "stats"
	OpShow    = "show"
)

// Ops lists every service operation.
var Ops = []string{OpRecall, OpContext, OpStore, OpForget, OpUpdate, OpList, OpStats, OpShow}

// EventSubject is where a hook event of kind for agent is published.
func EventSubject(kind EventKind, agent string) string {
	return EventsPrefix + "." + string(kind) + "." + agent
}

// ParseEventSubject splits clawmem.events.<kind>.<agent>.
func ParseEventSubject(subject string) (EventKind, string, error) {
	rest, ok := strings.CutPrefix(subject, EventsPrefix+".")
	kind, agent, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(agent, ".") {
		return "", "", fmt.Errorf("%w: %q is not an event subject", ErrInvalid, subject)
	}
	if err := ValidateAgentID(agent); err != nil {
		return "", "", err
	}
	k := EventKind(kind)
	if !k.Valid() {
		return "", "", fmt.Errorf("%w: unknown event kind %q", ErrInvalid, kind)
	}
	return k, agent, nil
}

// HookSubject is where an agent hands in a hook event of kind.
func HookSubject(agent string, kind EventKind) string {
	return HooksPrefix + "." + agent + "." + string(kind)
}

// ParseHookSubject splits clawmem.hooks.v1.<agent>.<kind>.
func ParseHookSubject(subject string) (string, EventKind, error) {
	rest, ok := strings.CutPrefix(subject, HooksPrefix+".")
	agent, kind, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(kind, ".") {
		return "", "", fmt.Errorf("%w: %q is not a hook subject (want %s.<agent>.<kind>)", ErrInvalid, subject, HooksPrefix)
	}
	if err := ValidateAgentID(agent); err != nil {
		return "", "", err
	}
	k := EventKind(kind)
	if !k.Valid() {
		return "", "", fmt.Errorf("%w: unknown event kind %q", ErrInvalid, kind)
	}
	return agent, k, nil
}

// TranscriptSubject is where a session's transcript entries go. Session ids
// are sanitised into one token.
func TranscriptSubject(agent, session string) string {
	return TranscriptPrefix + "." + agent + "." + SubjectToken(session)
}

// ParseTranscriptSubject splits clawmem.transcript.<agent>.<session token>.
func ParseTranscriptSubject(subject string) (agent, sessionToken string, err error) {
	rest, ok := strings.CutPrefix(subject, TranscriptPrefix+".")
	agent, sessionToken, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || sessionToken == "" || strings.Contains(sessionToken, ".") {
		return "", "", fmt.Errorf("%w: %q is not a transcript subject", ErrInvalid, subject)
	}
	if err := ValidateAgentID(agent); err != nil {
		return "", "", err
	}
	return agent, sessionToken, nil
}

// WorkPartitionSubject is the subject of agent's work for partition's writer:
// prefix is WorkCandidates or WorkLessons.
func WorkPartitionSubject(prefix, agent string, partition int) string {
	return prefix + "." + strconv.Itoa(partition) + "." + agent
}

// WorkItemSubject is the subject of agent's work in its own scope
// (agent:<id>) among partitions.
func WorkItemSubject(prefix, agent string, partitions int) string {
	return WorkPartitionSubject(prefix, agent, AgentPartition(agent, partitions))
}

// WorkFilters are the work subjects of one partition.
func WorkFilters(partition int) []string {
	p := strconv.Itoa(partition)
	return []string{WorkCandidates + "." + p + ".*", WorkLessons + "." + p + ".*"}
}

// ConsumerStoreFor is the durable consumer of one partition's work.
func ConsumerStoreFor(partition int) string { return ConsumerStore + "-" + strconv.Itoa(partition) }

// DefaultLeaseTTL is how long a partition's lease outlives its writer's
// last renewal unless nats.leaseTTL says otherwise. Six seconds lost
// leases to writers that a loaded machine starved for a few seconds, and
// every lost lease moves a partition and hands its messages back; fifteen
// keep a takeover after a writer's death well inside a minute.
const DefaultLeaseTTL = 15 * time.Second

// LeaseKey is the key of a partition's writer lease.
func LeaseKey(partition int) string { return LeasePrefix + "." + strconv.Itoa(partition) }

// PresenceKey is a writer's presence key.
func PresenceKey(writer string) string { return PresencePrefix + "." + SubjectToken(writer) }

// AgentFromSubject returns the last token of a per-agent subject, checked.
func AgentFromSubject(subject string) (string, error) {
	i := strings.LastIndexByte(subject, '.')
	agent := subject[i+1:]
	return agent, ValidateAgentID(agent)
}

// ServiceSubject is the request subject of op for agent.
func ServiceSubject(agent, op string) string { return ServicePrefix + "." + agent + "." + op }

// AdminSubject is the admin request subject of op.
func AdminSubject(op string) string { return AdminPrefix + "." + op }

// WriterSubject is where the writer of partition answers op for agent
// (admin: agent is empty).
func WriterSubject(partition int, agent, op string) string {
	p := strconv.Itoa(partition)
	if agent == "" {
		return WriterAdminPrefix + "." + p + "." + op
	}
	return WriterPrefix + "." + p + "." + agent + "." + op
}

// DLQSubjectFor is where a failed message from stage goes.
func DLQSubjectFor(stage, original string) string { return DLQPrefix + "." + stage + "." + original }

// SubjectToken makes s safe as one subject token: anything but letters,
// digits, - and _ becomes _.
func SubjectToken(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// DLQ headers explain why a message was dead-lettered.
const (
	HeaderDLQStage    = "Clawmem-Dlq-Stage"
	HeaderDLQReason   = "Clawmem-Dlq-Reason"
	HeaderDLQAttempts = "Clawmem-Dlq-Attempts"
	HeaderDLQSubject  = "Clawmem-Dlq-Subject"
	HeaderDLQStream   = "Clawmem-Dlq-Stream"
	HeaderDLQSequence = "Clawmem-Dlq-Sequence"
	HeaderDLQTime     = "Clawmem-Dlq-Time"
	HeaderDLQWorker   = "Clawmem-Dlq-Worker"
)

package producers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/schemas"
)

// Errors a publish can fail with besides schemas.ErrInvalid (bad input,
// never worth retrying). Callers map them to their own terms: the HTTP
// ingest answers 413 and 503.
var (
	// ErrTooLarge: the event, or the body carrying it, is over the limit.
	ErrTooLarge = errors.New("too large")
	// ErrUnavailable: JetStream did not acknowledge the event, so it may not
	// be stored. Retrying is safe: the Msg-Id makes a second copy a no-op.
	ErrUnavailable = errors.New("jetstream unavailable")
)

// maxMsgIDLen bounds a caller-supplied Msg-Id; it travels in a header.
const maxMsgIDLen = 256

// Meta is the hook context that travels in the envelope beside the event.
type Meta struct {
	SessionKey string
	SessionID  string
	RunID      string
	ChannelID  string
	// MsgID overrides the derived Nats-Msg-Id. Set it only when the caller
	// has an id that is stable across retries of the same hook.
	MsgID string
	// Timestamp in Unix milliseconds; 0 means now. A caller-supplied value
	// also feeds the derived Msg-Id, so pass the hook's own time, never the
	// time of the attempt.
	Timestamp int64
}

// Ack is JetStream's acknowledgement: the event is persisted at Seq, or was
// already there (Duplicate) because the same hook was published before.
type Ack struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

// Publisher validates hook events, wraps them in the versioned envelope and
// publishes them to the EVENTS stream with a Msg-Id that makes retries
// idempotent. It is safe for concurrent use.
type Publisher struct {
	js      jetstream.JetStream
	owned   *nats.Conn // closed by Close when Connect opened it
	secrets redact.Mode
}

// Option configures a Publisher.
type Option func(*Publisher)

// WithSecrets sets what becomes of a credential in an event (secrets.mode):
// unless off, every string value of the event is redacted before it is
// published, so the events stream never holds one. An event cannot be
// refused in part, so refuse redacts here too and capture drops the
// redacted message. Default redact.
func WithSecrets(m redact.Mode) Option {
	return func(p *Publisher) {
		if m != "" {
			p.secrets = m
		}
	}
}

// New wraps an existing JetStream context; the caller keeps owning the
// connection.
func New(js jetstream.JetStream, opts ...Option) *Publisher {
	p := &Publisher{js: js, secrets: redact.ModeRedact}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Connect opens a NATS connection for a Publisher; Close closes it. It
// reconnects forever, since a producer that gives up loses hook events.
func Connect(url string, opts ...nats.Option) (*Publisher, error) {
	if url == "" {
		url = nats.DefaultURL
	}
	base := []nats.Option{nats.Name("clawmem-producer"), nats.MaxReconnects(-1)}
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w (is `clawmem up` running?)", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	p := New(js)
	p.owned = nc
	return p, nil
}

// Close closes the connection if Connect opened it. Nothing is buffered:
// Publish returns only after the ack.
func (p *Publisher) Close() {
	if p.owned != nil {
		p.owned.Close()
	}
}

// Connected reports whether the NATS connection is up.
func (p *Publisher) Connected() bool { return p.js.Conn().IsConnected() }

// Status names the connection state ("CONNECTED", "RECONNECTING", ...).
func (p *Publisher) Status() string { return p.js.Conn().Status().String() }

// Publish validates one hook event and publishes it for agent, returning
// once JetStream has persisted it. A schemas.ErrInvalid or ErrTooLarge
// error means nothing was published and a retry cannot help; any other
// error wraps ErrUnavailable and a retry is safe.
func (p *Publisher) Publish(ctx context.Context, kind schemas.EventKind, agent string, event json.RawMessage, meta Meta) (Ack, error) {
	msg, err := prepare(kind, agent, event, meta, p.secrets)
	if err != nil {
		return Ack{}, err
	}
	pa, err := p.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(schemas.StreamEvents))
	if err != nil {
		return Ack{}, publishError(err)
	}
	return Ack{Stream: pa.Stream, Seq: pa.Sequence, Duplicate: pa.Duplicate}, nil
}

// prepare validates an event and builds the NATS message Publish sends:
// subject, envelope and Nats-Msg-Id header. The Msg-Id is derived from the
// event as given, before its secrets are redacted, so a retry is a
// duplicate whatever the redaction does.
func prepare(kind schemas.EventKind, agent string, event json.RawMessage, meta Meta, secrets redact.Mode) (*nats.Msg, error) {
	if !kind.Valid() {
		return nil, fmt.Errorf("%w: unknown event kind %q (want one of %s)", schemas.ErrInvalid, kind, kindList())
	}
	if err := schemas.ValidateAgentID(agent); err != nil {
		return nil, fmt.Errorf("%w (events without a valid agent are refused)", err)
	}
	if err := validateMsgID(meta.MsgID); err != nil {
		return nil, err
	}
	count, err := ValidateEvent(kind, event)
	if err != nil {
		return nil, err
	}
	id := meta.MsgID
	if id == "" {
		id = deriveMsgID(kind, agent, event, meta, count)
	} else {
		id = OwnMsgID(kind, agent, id)
	}
	if secrets != redact.ModeOff {
		red, _, err := redact.RedactJSON(event)
		if err != nil {
			return nil, err
		}
		event = red
	}
	ts := meta.Timestamp
	if ts == 0 {
		ts = time.Now().UnixMilli()
	}
	env := schemas.HookEvent{
		V: schemas.Version, Kind: kind, AgentID: agent,
		SessionKey: meta.SessionKey, SessionID: meta.SessionID, RunID: meta.RunID, ChannelID: meta.ChannelID,
		Timestamp: ts, Event: event,
	}
	data, err := marshalEnvelope(env)
	if err != nil {
		return nil, fmt.Errorf("%w: encode envelope: %v", schemas.ErrInvalid, err)
	}
	// The stream's MaxMsgSize is MaxEventBytes, so the envelope itself must
	// fit: refusing here gives a clear error instead of JetStream's.
	if len(data) > schemas.MaxEventBytes {
		return nil, fmt.Errorf("%w: event with its envelope is %d bytes (max %d)", ErrTooLarge, len(data), schemas.MaxEventBytes)
	}
	msg := nats.NewMsg(schemas.EventSubject(kind, agent))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, id)
	return msg, nil
}

// marshalEnvelope encodes the envelope around the event without
// re-encoding the event: json.Marshal would compact (rescan) a RawMessage
// of up to MaxEventBytes and escape its HTML characters. The envelope is
// encoded with a one-byte placeholder event and the real one spliced in;
// the event is already validated JSON.
func marshalEnvelope(env schemas.HookEvent) ([]byte, error) {
	event := env.Event
	env.Event = json.RawMessage("0")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		return nil, err
	}
	const tail = `"event":0}` + "\n"
	head, ok := bytes.CutSuffix(buf.Bytes(), []byte(tail))
	if !ok {
		// The envelope's field order changed; encode it the slow way.
		env.Event = event
		return json.Marshal(env)
	}
	out := make([]byte, 0, len(head)+len(`"event":`)+len(event)+1)
	out = append(out, head...)
	out = append(out, `"event":`...)
	out = append(out, event...)
	return append(out, '}'), nil
}

// publishError sorts a JetStream failure into ErrTooLarge (retrying cannot
// help) or ErrUnavailable (retrying can).
func publishError(err error) error {
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		return fmt.Errorf("%w: no stream answered for %s (are the streams created? `clawmem up` creates them): %v",
			ErrUnavailable, schemas.EventsSubject, err)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// OwnMsgID puts a caller's Msg-Id in the agent's own namespace: the
// events stream deduplicates by Msg-Id alone, so an id that did not start
// with "<kind>.<agent>." could be chosen to equal another agent's next
// event and have that event dropped as a duplicate. Derived ids already
// start so; any other id is prefixed.
func OwnMsgID(kind schemas.EventKind, agent, id string) string {
	prefix := string(kind) + "." + agent + "."
	if strings.HasPrefix(id, prefix) {
		return id
	}
	return prefix + id
}

func validateMsgID(id string) error {
	if len(id) > maxMsgIDLen {
		return fmt.Errorf("%w: msgId is %d bytes long (max %d)", schemas.ErrInvalid, len(id), maxMsgIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return fmt.Errorf("%w: msgId may only contain printable ASCII without spaces", schemas.ErrInvalid)
		}
	}
	return nil
}

// ValidateEvent checks that event is a JSON object of the shape kind
// defines, so workers never meet a body they cannot decode. It returns the
// number of inline messages, which the agent_end Msg-Id depends on.
func ValidateEvent(kind schemas.EventKind, event json.RawMessage) (int, error) {
	if len(event) > schemas.MaxEventBytes {
		return 0, fmt.Errorf("%w: event is %d bytes (max %d)", ErrTooLarge, len(event), schemas.MaxEventBytes)
	}
	if !utf8.Valid(event) {
		return 0, fmt.Errorf("%w: event is not valid UTF-8", schemas.ErrInvalid)
	}
	if !startsObject(event) {
		return 0, notObject("event", event)
	}
	var target any
	var count func() int
	switch kind {
	case schemas.KindAgentEnd:
		var e schemas.AgentEndEvent
		target, count = &e, func() int { return len(e.Messages) }
	case schemas.KindBeforePromptBuild, schemas.KindBeforeAgentStart:
		var e schemas.PromptBuildEvent
		target, count = &e, func() int { return len(e.Messages) }
	case schemas.KindCommandNew, schemas.KindCommandReset, schemas.KindBeforeReset, schemas.KindBeforeCompaction, schemas.KindSessionEnd:
		var e schemas.SessionEvent
		target, count = &e, func() int { return len(e.Messages) }
	case schemas.KindMessageReceived, schemas.KindMessageSent:
		var e schemas.MessageEvent
		target, count = &e, func() int { return 0 }
	default:
		return 0, fmt.Errorf("%w: unknown event kind %q (want one of %s)", schemas.ErrInvalid, kind, kindList())
	}
	// Unmarshal checks the syntax (and that nothing trails the object)
	// before decoding, so this one call validates both.
	if err := json.Unmarshal(event, target); err != nil {
		return 0, decodeError("event", err)
	}
	return count(), nil
}

// startsObject reports whether b's first non-blank byte opens an object;
// json.Unmarshal checks the rest.
func startsObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// notObject explains why b, which does not start an object, was refused.
func notObject(what string, b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return decodeError(what, err)
	}
	return fmt.Errorf("%w: %s must be a JSON object", schemas.ErrInvalid, what)
}

// decodeError turns a json error into one naming the field and the types,
// e.g. `event.success: want boolean, got string`.
func decodeError(prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := prefix
		if te.Field != "" {
			field += "." + te.Field
		}
		return fmt.Errorf("%w: %s: want %s, got %s", schemas.ErrInvalid, field, jsonTypeName(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %s: malformed JSON at byte %d: %v", schemas.ErrInvalid, prefix, se.Offset, se)
	}
	return fmt.Errorf("%w: %s: %v", schemas.ErrInvalid, prefix, err)
}

// jsonTypeName names a Go type the way a JSON author thinks of it.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// ParseKind is schemas.ParseEventKind with a fast path for the canonical
// spelling, which is what almost every request uses.
func ParseKind(s string) (schemas.EventKind, bool) {
	if k := schemas.EventKind(s); k.Valid() {
		return k, true
	}
	return schemas.ParseEventKind(s)
}

func kindList() string {
	names := make([]string, len(schemas.EventKinds))
	for i, k := range schemas.EventKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// deriveMsgID makes the Nats-Msg-Id from what stays the same when a hook is
// retried, so JetStream drops the second copy within its duplicate window.
//
// agent_end carries the whole history, so (session, run, message count)
// identifies it: a retry repeats all three, while the next turn grows the
// history and gets a new id. Other kinds use (session, run, timestamp).
// Where the hook gave no session or run, or (for other kinds) no
// timestamp, those fields cannot tell two real events apart, so a SHA-256
// of the canonical event body joins them: identical bodies are then the
// same event, which is the best a retry can be recognised by.
func deriveMsgID(kind schemas.EventKind, agent string, event json.RawMessage, meta Meta, messages int) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(string(kind))
	field(agent)
	noContext := meta.SessionKey == "" && meta.SessionID == "" && meta.RunID == ""
	if kind == schemas.KindAgentEnd {
		session := meta.SessionKey
		if session == "" {
			session = meta.SessionID
		}
		field(session)
		field(meta.RunID)
		field(strconv.Itoa(messages))
		if noContext {
			field(canonicalHash(event))
		}
	} else {
		field(meta.SessionKey)
		field(meta.SessionID)
		field(meta.RunID)
		field(strconv.FormatInt(meta.Timestamp, 10))
		if noContext || meta.Timestamp == 0 {
			field(canonicalHash(event))
		}
	}
	return string(kind) + "." + agent + "." + hex.EncodeToString(h.Sum(nil)[:16])
}

// canonicalHash hashes the event re-encoded with sorted keys, no
// whitespace and exact numbers, so the same event hashes the same however
// its sender formatted it.
func canonicalHash(event json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	var v any
	sum := sha256.New()
	if err := dec.Decode(&v); err != nil {
		sum.Write(event) // unreachable after validation; hash the raw bytes
	} else {
		enc := json.NewEncoder(sum)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// Package schemas holds clawmem's wire types, subjects and names. It has no
// logic beyond validating the shape of the values it defines.
package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Category classifies a memory. The set is the seed plugin's plus reflection,
// which distilled lessons use.
type Category string

const (
	CategoryPreference Category = "preference"
	CategoryFact       Category = "fact"
	CategoryDecision   Category = "decision"
	CategoryEntity     Category = "entity"
	CategoryOther      Category = "other"
	CategoryReflection Category = "reflection"
)

// Categories lists every valid category in a stable order.
var Categories = []Category{
	CategoryPreference, CategoryFact, CategoryDecision,
	CategoryEntity, CategoryOther, CategoryReflection,
}

// Valid reports whether c is one of Categories.
func (c Category) Valid() bool { return slices.Contains(Categories, c) }

// ParseCategory returns the category named s, or an error listing the valid ones.
func ParseCategory(s string) (Category, error) {
	c := Category(strings.ToLower(strings.TrimSpace(s)))
	if !c.Valid() {
		return "", fmt.Errorf("%w: category %q (want one of %s)", ErrInvalid, s, joinCategories())
	}
	return c, nil
}

func joinCategories() string {
	parts := make([]string, len(Categories))
	for i, c := range Categories {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}

const (
	// GlobalScope is the shared scope every agent can read by default. Rows
	// without a scope (legacy data) belong to it.
	GlobalScope = "global"
	// MaxScopeLen is the longest scope name accepted.
	MaxScopeLen = 100
	// MaxTextBytes bounds one memory's text. Memories are atomic notes; a
	// megabyte of text is a transcript, not a memory.
	MaxTextBytes = 64 * 1024
	// MaxMetadataBytes bounds the serialised metadata object.
	MaxMetadataBytes = 64 * 1024
	// DefaultImportance is what auto-capture and the store tool use.
	DefaultImportance = 0.7
)

// ErrInvalid is wrapped by every validation error so callers can tell bad
// input from failures of the system.
var ErrInvalid = errors.New("invalid input")

// ErrUnavailable is wrapped by errors of a provider (embedding, LLM) that
// is down, overloaded, timing out or answering garbage: a failure of the
// moment, not of the input, so a pipeline stage retries it for as long
// as it lasts instead of dead-lettering the message.
var ErrUnavailable = errors.New("provider unavailable")

// Unavailable marks err as a provider's failure of the moment.
func Unavailable(err error) error { return fmt.Errorf("%w: %w", ErrUnavailable, err) }

var scopePattern = regexp.MustCompile(`^[a-zA-Z0-9._:-]+$`)

// ValidateScope checks a scope name's format: ^[a-zA-Z0-9._:-]+$, at most 100 chars.
func ValidateScope(scope string) error {
	if scope == "" {
		return fmt.Errorf("%w: scope is empty", ErrInvalid)
	}
	if len(scope) > MaxScopeLen {
		return fmt.Errorf("%w: scope is %d chars long (max %d)", ErrInvalid, len(scope), MaxScopeLen)
	}
	if !scopePattern.MatchString(scope) {
		return fmt.Errorf("%w: scope %q may only contain letters, digits and . _ : -", ErrInvalid, scope)
	}
	return nil
}

// Memory is one stored memory. Timestamp is the creation time in epoch
// milliseconds and never changes after creation; Metadata is a JSON object.
type Memory struct {
	ID         string          `json:"id"`
	Text       string          `json:"text"`
	Vector     []float32       `json:"vector,omitempty"`
	Category   Category        `json:"category"`
	Scope      string          `json:"scope"`
	Importance float64         `json:"importance"`
	Timestamp  int64           `json:"timestamp"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// A fact's life: ValidFrom is when it became true (epoch ms; 0: since
	// it was stored), InvalidatedAt when it stopped (0: it holds), and
	// SupersededBy the id of the memory that replaced it. An invalidated
	// memory is history: kept, exported and backed up, but hidden from
	// recall, context and list unless history is asked for.
	SupersededBy  string `json:"supersededBy,omitempty"`
	ValidFrom     int64  `json:"validFrom,omitempty"`
	InvalidatedAt int64  `json:"invalidatedAt,omitempty"`
}

// Current reports whether m still holds (is not superseded or archived).
func (m Memory) Current() bool { return m.InvalidatedAt == 0 }

// Normalize fills defaults and clamps importance, in place: an empty
// category becomes other, an empty scope global, a missing metadata object
// {}, and a NaN importance the default.
func (m *Memory) Normalize() {
	if m.Category == "" {
		m.Category = CategoryOther
	}
	if m.Scope == "" {
		m.Scope = GlobalScope
	}
	if len(m.Metadata) == 0 || string(m.Metadata) == "null" {
		m.Metadata = json.RawMessage("{}")
	}
	m.Importance = ClampImportance(m.Importance)
}

// ClampImportance maps any value into [0,1]; NaN becomes the default.
func ClampImportance(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return DefaultImportance
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

// Validate checks everything but the id, timestamp and vector dimension,
// which belong to the store. Call Normalize first.
func (m *Memory) Validate() error {
	if err := ValidateText(m.Text); err != nil {
		return err
	}
	if !m.Category.Valid() {
		return fmt.Errorf("%w: category %q (want one of %s)", ErrInvalid, m.Category, joinCategories())
	}
	if err := ValidateScope(m.Scope); err != nil {
		return err
	}
	if err := ValidateMetadata(m.Metadata); err != nil {
		return err
	}
	return ValidateVector(m.Vector)
}

// ValidateText checks that text is non-blank, valid UTF-8, NUL-free and within MaxTextBytes.
func ValidateText(text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: text is empty", ErrInvalid)
	}
	if len(text) > MaxTextBytes {
		return fmt.Errorf("%w: text is %d bytes (max %d); store a shorter, atomic memory", ErrInvalid, len(text), MaxTextBytes)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: text is not valid UTF-8", ErrInvalid)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return fmt.Errorf("%w: text contains a NUL byte", ErrInvalid)
	}
	return nil
}

// ValidateMetadata checks that raw is empty or a JSON object within MaxMetadataBytes.
func ValidateMetadata(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > MaxMetadataBytes {
		return fmt.Errorf("%w: metadata is %d bytes (max %d)", ErrInvalid, len(raw), MaxMetadataBytes)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: metadata must be a JSON object", ErrInvalid)
	}
	return nil
}

// ValidateVector rejects NaN and infinite components.
func ValidateVector(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: vector component %d is %v", ErrInvalid, i, x)
		}
	}
	return nil
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// IsUUID reports whether s is a canonical lower-case UUID.
func IsUUID(s string) bool { return uuidPattern.MatchString(s) }

// MinPrefixLen is the shortest id prefix resolved to a memory.
const MinPrefixLen = 8

var prefixPattern = regexp.MustCompile(`^[0-9a-f]{8}[0-9a-f-]{0,28}$`)

// ValidateIDOrPrefix accepts a full UUID or a prefix of at least 8 hex chars
// (dashes allowed after the first 8, as in a truncated UUID).
func ValidateIDOrPrefix(s string) error {
	if IsUUID(s) {
		return nil
	}
	if !prefixPattern.MatchString(s) {
		return fmt.Errorf("%w: %q is neither a memory id (UUID) nor a prefix of at least %d hex chars", ErrInvalid, s, MinPrefixLen)
	}
	return nil
}

// MaxAgentIDLen bounds an agent id.
const MaxAgentIDLen = 64

var agentIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// ValidateAgentID checks an agent id. Agent ids become NATS subject tokens
// and parts of scope names, so dots, wildcards, slashes and spaces are refused.
func ValidateAgentID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: agent id is empty", ErrInvalid)
	}
	if len(id) > MaxAgentIDLen {
		return fmt.Errorf("%w: agent id is %d chars long (max %d)", ErrInvalid, len(id), MaxAgentIDLen)
	}
	if !agentIDPattern.MatchString(id) {
		return fmt.Errorf("%w: agent id %q may only contain letters, digits, _ and -", ErrInvalid, id)
	}
	return nil
}

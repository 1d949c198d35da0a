package schemas

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// The memory log: every committed change of a memory, with its vector, on
// the stream StreamMemories under clawmem.mem.<partition>.<scope>.<id>.
// The stream keeps one message per subject (the memory's last state, or
// its deletion), so it is a compacted log: replaying it from the start
// rebuilds every memory, and it grows with the memories, not with their
// edits.
const (
	StreamMemories  = "CLAWMEM_MEMORIES"
	MemoriesPrefix  = "clawmem.mem"
	MemoriesSubject = MemoriesPrefix + ".>"

	// DefaultPartitions is how many partitions agents map to unless a
	// deployment says otherwise; fixed at deploy.
	DefaultPartitions = 16

	// LogVersion is the memory log entry's format version.
	LogVersion = 1

	LogPut    = "put"
	LogDelete = "delete"
)

// PartitionKey is what a memory's partition is derived from: the agent of
// an agent: scope, else the scope itself (global and custom scopes form
// partitions of their own).
func PartitionKey(scope string) string {
	if agent, ok := strings.CutPrefix(scope, "agent:"); ok && agent != "" {
		return agent
	}
	return scope
}

// Partition maps a key (an agent id) to one of n partitions with FNV-1a:
// every process computes the same partition without asking anyone.
func Partition(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// ScopePartition is the partition of a scope's memories: one writer
// writes a scope, so its duplicate checks never race another's.
func ScopePartition(scope string, n int) int { return Partition(PartitionKey(scope), n) }

// AgentPartition is the partition of an agent's own scope (agent:<id>).
func AgentPartition(agent string, n int) int { return ScopePartition("agent:"+agent, n) }

// PartitionRanges writes sorted partition numbers as runs, "0-15" or
// "0-3, 7, 9-10": a writer's partitions in one line of a log or a status.
func PartitionRanges(ps []int) string {
	var parts []string
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ps[i], ps[j]))
		} else {
			parts = append(parts, strconv.Itoa(ps[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// HeaderLogWriter names the writer that published a log entry: a writer
// skips its own entries when it follows the log (its store has them).
const HeaderLogWriter = "Clawmem-Writer"

// MemoryLogSubject is the subject of a memory's log entries.
func MemoryLogSubject(partition int, scope, id string) string {
	return MemoriesPrefix + "." + strconv.Itoa(partition) + "." + SubjectToken(scope) + "." + SubjectToken(id)
}

// LogEntry is one message of the memory log.
type LogEntry struct {
	V  int    `json:"v"`
	Op string `json:"op"` // LogPut or LogDelete
	ID string `json:"id"`
	// Rev is the writer's change-log revision: with ID, the Msg-Id.
	Rev int64 `json:"rev"`
	// Memory is the memory as it is now (LogPut), without its vector.
	Memory *Memory `json:"memory,omitempty"`
	// Vector is the memory's vector, little-endian float32.
	Vector []byte `json:"vector,omitempty"`
}

// EncodeVector is v as LogEntry.Vector carries it.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeLogEntry parses and checks one log message; for a put it returns
// the memory with its vector, which must have dim dimensions. Nothing
// half-read is returned: a message that does not decode is an error.
func DecodeLogEntry(data []byte, dim int) (LogEntry, Memory, error) {
	var e LogEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return e, Memory{}, fmt.Errorf("%w: memory log entry: %v", ErrInvalid, err)
	}
	if e.V != LogVersion {
		return e, Memory{}, fmt.Errorf("%w: memory log entry version %d (this clawmem reads %d)", ErrInvalid, e.V, LogVersion)
	}
	if !IsUUID(e.ID) {
		return e, Memory{}, fmt.Errorf("%w: memory log entry id %q is not a memory id", ErrInvalid, e.ID)
	}
	switch e.Op {
	case LogDelete:
		return e, Memory{}, nil
	case LogPut:
	default:
		return e, Memory{}, fmt.Errorf("%w: memory log entry %s: unknown op %q", ErrInvalid, e.ID, e.Op)
	}
	if e.Memory == nil || e.Memory.ID != e.ID {
		return e, Memory{}, fmt.Errorf("%w: memory log entry %s carries no memory, or another one", ErrInvalid, e.ID)
	}
	if len(e.Vector) != 4*dim {
		return e, Memory{}, fmt.Errorf("%w: memory log entry %s has a %d-dimension vector, this store %d (another embedding model?)",
			ErrInvalid, e.ID, len(e.Vector)/4, dim)
	}
	m := *e.Memory
	m.Vector = make([]float32, dim)
	for i := range m.Vector {
		m.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(e.Vector[4*i:]))
	}
	return e, m, nil
}

package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Streams sets how long the JetStream streams that hold what agents said
// keep it. The memory log and the work queue have no age: the one holds
// every memory's last state, the other empties as it is worked.
type Streams struct {
	Events      Retention `json:"events"`      // hook events; default 7d
	Transcripts Retention `json:"transcripts"` // session transcripts; default 30d
	DLQ         Retention `json:"dlq"`         // dead letters; default 30d
}

// Retention is one stream's limit.
type Retention struct {
	// MaxAge is how long a message is kept: a Go duration ("36h") or a
	// number of days ("7d"), from 1h to 3650d. A change applies to the
	// stream at the next start, to the messages already in it too.
	MaxAge string `json:"maxAge"`
}

// The bounds of a stream's max age.
const (
	MinStreamAge = time.Hour
	MaxStreamAge = 3650 * 24 * time.Hour
)

// ParseAge reads a max age: a Go duration, or whole days as "7d".
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > int(MaxStreamAge/(24*time.Hour)) {
			return 0, fmt.Errorf("%q: want whole days such as 7d, or a duration such as 36h", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(s)); err != nil {
			return 0, fmt.Errorf("%q: want whole days such as 7d, or a duration such as 36h", s)
		}
	}
	if d < MinStreamAge || d > MaxStreamAge {
		return 0, fmt.Errorf("%q: allowed range 1h..3650d", s)
	}
	return d, nil
}

// MaxAges are the three streams' ages, for topology.Config; a value that
// does not parse (Validate reports it) gives 0, the stream's default.
func (s Streams) MaxAges() (events, transcripts, dlq time.Duration) {
	age := func(r Retention) time.Duration {
		d, _ := ParseAge(r.MaxAge)
		return d
	}
	return age(s.Events), age(s.Transcripts), age(s.DLQ)
}

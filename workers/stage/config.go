package stage

import "time"

// Config tunes a consuming stage.
type Config struct {
	Batch       int           // messages handled together; default 64
	Linger      time.Duration // how long a partial batch waits for more; default 5 ms
	AckWait     time.Duration // default 30 s; heartbeats keep slow work alive
	MaxDeliver  int           // deliveries before a failing message goes to the DLQ; default 5
	Backoff     []time.Duration
	MaxDuration time.Duration // one batch's time limit; default 2 min
	// StallAfter is how long messages may wait without a batch of the
	// stage being settled before it counts as stalled; default 2×AckWait.
	StallAfter time.Duration
}

func (c Config) withDefaults() Config {
	if c.Batch <= 0 {
		c.Batch = 64
	}
	if c.Linger <= 0 {
		c.Linger = 5 * time.Millisecond
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if len(c.Backoff) == 0 {
		c.Backoff = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = 2 * time.Minute
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 2 * c.AckWait
	}
	return c
}

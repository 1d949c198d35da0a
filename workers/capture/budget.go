package capture

import (
	"sync"
	"time"
)

// tokenBudget is each agent's LLM tokens over a rolling window.
type tokenBudget struct {
	mu     sync.Mutex
	limit  int // < 0: none
	window time.Duration
	spent  map[string][]spend
	now    func() time.Time
}

type spend struct {
	at     time.Time
	tokens int
}

func newTokenBudget(limit int, window time.Duration) *tokenBudget {
	return &tokenBudget{limit: limit, window: window, spent: map[string][]spend{}, now: time.Now}
}

// allow reports whether agent has tokens left in the window.
func (b *tokenBudget) allow(agent string) bool {
	if b.limit < 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used(agent) < b.limit
}

func (b *tokenBudget) spend(agent string, tokens int) {
	if tokens <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent[agent] = append(b.spent[agent], spend{at: b.now(), tokens: tokens})
}

// used sums the window's spending, dropping what fell out of it.
func (b *tokenBudget) used(agent string) int {
	cut := b.now().Add(-b.window)
	s := b.spent[agent]
	i := 0
	for i < len(s) && !s[i].at.After(cut) {
		i++
	}
	s = s[i:]
	b.spent[agent] = s
	n := 0
	for _, e := range s {
		n += e.tokens
	}
	return n
}

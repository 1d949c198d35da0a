package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"time"
)

// SignInTTL is how long a sign-in link works.
const SignInTTL = 2 * time.Minute

// A sign-in code is expiry (8 bytes, Unix seconds) ‖ nonce (16 bytes) ‖
// HMAC-SHA256 over both keyed by the admin token, URL-safe base64. Whoever
// holds the token (the data dir's owner) can mint one without asking the
// console; the console accepts each once, until it expires. The token
// itself never leaves the machine's files.
const (
	codeNonce = 16
	codeLen   = 8 + codeNonce + sha256.Size
)

// SignInCode mints a one-time sign-in code for the console whose admin
// token is adminToken, valid for SignInTTL from now. The console takes it
// as /login?code=…
func SignInCode(adminToken string, now time.Time) string {
	b := make([]byte, 8+codeNonce, codeLen)
	binary.BigEndian.PutUint64(b, uint64(now.Add(SignInTTL).Unix()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(append(b, codeMAC(adminToken, b)...))
}

func codeMAC(token string, msg []byte) []byte {
	m := hmac.New(sha256.New, []byte("clawmem console sign-in\x00"+token))
	m.Write(msg)
	return m.Sum(nil)
}

// redeem accepts a code signed with the admin token, unexpired, not used
// before (and not minted for further ahead than a code lives).
func (s *Server) redeem(code string) bool {
	b, err := base64.RawURLEncoding.DecodeString(code)
	if err != nil || len(b) != codeLen {
		return false
	}
	if !hmac.Equal(b[8+codeNonce:], codeMAC(s.cfg.AdminToken, b[:8+codeNonce])) {
		return false
	}
	now := s.o.Now()
	exp := time.Unix(int64(binary.BigEndian.Uint64(b)), 0)
	if !now.Before(exp) || exp.Sub(now) > SignInTTL+time.Minute {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, until := range s.used {
		if now.After(until) {
			delete(s.used, k)
		}
	}
	nonce := string(b[8 : 8+codeNonce])
	if _, seen := s.used[nonce]; seen {
		return false
	}
	s.used[nonce] = exp
	return true
}

// Login throttling: each client address has loginFree failures, then
// every further one locks it out for twice as long as the last (from 1 s,
// at most loginMaxLock). All addresses together get allFree, locked at
// most allMaxLock, so an attacker spreading over addresses is slowed too
// without locking the owner out for long. Failures are forgotten after
// loginForget without one, or on a success from that address.
const (
	loginFree    = 5
	loginMaxLock = 15 * time.Minute
	allFree      = 20
	allMaxLock   = time.Minute
	loginForget  = 15 * time.Minute
	maxTracked   = 10_000
)

type limiter struct {
	mu     sync.Mutex
	byAddr map[string]*strikes
	all    strikes
}

type strikes struct {
	n           int
	last, until time.Time
}

func newLimiter() *limiter { return &limiter{byAddr: map[string]*strikes{}} }

// wait is how long logins from addr must wait; 0: go ahead.
func (l *limiter) wait(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.all.until.Sub(now)
	if st := l.byAddr[addr]; st != nil {
		w = max(w, st.until.Sub(now))
	}
	return max(w, 0)
}

// fail counts a failed login from addr.
func (l *limiter) fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.byAddr[addr]
	if st == nil {
		if len(l.byAddr) >= maxTracked {
			l.prune(now)
		}
		st = &strikes{}
		l.byAddr[addr] = st
	}
	st.strike(now, loginFree, loginMaxLock)
	l.all.strike(now, allFree, allMaxLock)
}

func (st *strikes) strike(now time.Time, free int, maxLock time.Duration) {
	if now.Sub(st.last) > loginForget {
		st.n = 0
	}
	st.n++
	st.last = now
	if over := st.n - free; over > 0 {
		lock := maxLock
		if over <= 30 {
			lock = min(time.Second<<(over-1), maxLock)
		}
		st.until = now.Add(lock)
	}
}

// succeed forgets addr's failures.
func (l *limiter) succeed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byAddr, addr)
}

// prune drops addresses whose failures are forgotten; if none are, the
// one whose lockout ends first (unlocked ones before locked ones) goes,
// so the map stays bounded whatever the number of addresses.
func (l *limiter) prune(now time.Time) {
	var first string
	for a, st := range l.byAddr {
		if now.Sub(st.last) > loginForget && now.After(st.until) {
			delete(l.byAddr, a)
		} else if first == "" || st.until.Before(l.byAddr[first].until) {
			first = a
		}
	}
	if len(l.byAddr) >= maxTracked {
		delete(l.byAddr, first)
	}
}

// clientAddr is the address a login is throttled by: the peer's IP.
// Behind a reverse proxy every client has the proxy's.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

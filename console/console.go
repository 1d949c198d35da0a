// Package console is clawmem's web console: server-rendered pages to
// browse, search, fix and watch the memories of every agent and the
// pipeline that makes them. Every page and action goes through the same
// client operations the CLI and the tools use (client.Client for the
// memories, client.Pipeline for dead letters, distillation and status),
// so scope isolation applies unchanged: a page viewed as an agent shows
// what that agent's tools would, and an edit made as it is refused where
// its tools would be.
//
// Access: always by login. A login form takes a token, or a one-time
// sign-in link (SignInCode, what `clawmem ui login` prints) is exchanged,
// for a session cookie (HttpOnly, SameSite=Strict); the read token gives
// read-only access, the admin token every action. Failed logins are
// throttled per client address and overall. Every request must name the
// console in its Host header (no DNS rebinding); every change is a POST
// carrying the session's CSRF token, and a cross-site POST is refused
// whatever it carries.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/httpguard"
	"github.com/clawmem/clawmem/workers/lessons"
)

// DefaultListen is the console's address by default (ui.listen).
const DefaultListen = "127.0.0.1:7434"

// Config is the ui.* configuration.
type Config struct {
	// Listen is host:port.
	Listen string
	// ReadToken logs in read-only, AdminToken (required) with every
	// action and signs the one-time sign-in links.
	ReadToken  string
	AdminToken string
	// AllowedHosts are names besides loopback ones (and the listen IP)
	// that browsers may reach the console by.
	AllowedHosts []string
}

// Options are what the console works with.
type Options struct {
	Client   client.Client
	Pipeline client.Pipeline
	// ConfigFile reads the configuration for the configuration page
	// (nil: the page says it is not available here).
	ConfigFile *config.Options
	// StartupChecks returns the store worker's last start-up checks,
	// when they ran, and whether there are any (nil: not available here).
	StartupChecks func() ([]StartupCheck, time.Time, bool)
	// Distill distils one session now (nil: re-running is not available
	// here).
	Distill func(ctx context.Context, agent, session string) (lessons.TranscriptReport, error)
	Log     *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// StartupCheck is one of the store worker's start-up checks.
type StartupCheck struct {
	Name, Detail, Fix string
	OK                bool
}

// Role is what a session may do.
type Role string

const (
	RoleRead  Role = "read"
	RoleAdmin Role = "admin"
)

// Server is the console.
type Server struct {
	cfg   Config
	o     Options
	pages map[string]*template.Template
	limit *limiter

	mu       sync.Mutex
	sessions map[string]*session
	used     map[string]time.Time // sign-in codes redeemed, until they expire
}

// session is a logged-in browser.
type session struct {
	role    Role
	csrf    string
	expires time.Time
}

// sessionTTL is how long a login lasts without use.
const sessionTTL = 12 * time.Hour

const sessionCookie = "clawmem_session"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New checks the configuration and prepares the pages.
func New(cfg Config, o Options) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return nil, fmt.Errorf("ui.listen %q: %w", cfg.Listen, err)
	}
	if cfg.AdminToken == "" {
		return nil, errors.New("console: an admin token is needed (ui.adminToken, or the data dir's auth/console.token)")
	}
	if cfg.ReadToken != "" && cfg.ReadToken == cfg.AdminToken {
		return nil, errors.New("ui.readToken and ui.adminToken must differ")
	}
	if o.Client == nil || o.Pipeline == nil {
		return nil, errors.New("console: a client and a pipeline are needed")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{cfg: cfg, o: o, limit: newLimiter(), sessions: map[string]*session{}, used: map[string]time.Time{}}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	return s, nil
}

// Serve answers on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(s.o.Log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler is the console's routes behind its security layer.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.loginPost)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /live", s.live)
	mux.HandleFunc("GET /memories", s.memories)
	mux.HandleFunc("GET /memories/{id}", s.memory)
	mux.HandleFunc("POST /memories/{id}/edit", s.edit)
	mux.HandleFunc("GET /memories/{id}/delete", s.deleteConfirm)
	mux.HandleFunc("POST /memories/{id}/delete", s.deletePost)
	mux.HandleFunc("GET /search", s.search)
	mux.HandleFunc("GET /dlq", s.deadLetters)
	mux.HandleFunc("GET /dlq/{seq}", s.deadLetter)
	mux.HandleFunc("POST /dlq/replay", s.replay)
	mux.HandleFunc("POST /dlq/purge", s.purge)
	mux.HandleFunc("GET /distill", s.distillPage)
	mux.HandleFunc("POST /distill/run", s.distillRun)
	mux.HandleFunc("GET /config", s.configPage)
	// The Host check answers before anything else, so a rebound page
	// learns nothing, not even the login form.
	return httpguard.CheckHost(httpguard.Hosts{Listen: s.cfg.Listen, Extra: s.cfg.AllowedHosts})(s.secure(mux))
}

// secure sets the security headers, recovers panics, and lets a request
// through only with the access it needs: static files and the login page
// always; pages with a session (or none needed); changes from the same
// site with the CSRF token, as an admin.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.o.Log.Error("console: handler panic", "path", r.URL.Path, "panic", v)
				s.fail(w, r, http.StatusInternalServerError, "Something went wrong on the server; it is in the log.")
			}
		}()
		if strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/login" {
			if r.Method == http.MethodPost && httpguard.CrossSite(r) {
				s.fail(w, r, http.StatusForbidden, "Cross-site requests are refused.")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		sess := s.sessionOf(r)
		if sess == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.fail(w, r, http.StatusUnauthorized, "Log in first.")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if httpguard.CrossSite(r) {
				s.fail(w, r, http.StatusForbidden, "Cross-site requests are refused.")
				return
			}
			if r.URL.Path != "/logout" && sess.role != RoleAdmin {
				s.fail(w, r, http.StatusForbidden, "This needs the admin role; you are logged in read-only.")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				s.fail(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(sess.csrf)) != 1 {
				s.fail(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the page and try again.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// maxForm bounds a form body (an edited memory's text is the largest).
const maxForm = 1 << 20

type sessionKey struct{}

func sessionFrom(r *http.Request) *session {
	s, _ := r.Context().Value(sessionKey{}).(*session)
	return s
}

// sessionOf is the request's logged-in session; nil: not logged in.
func (s *Server) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[c.Value]
	now := s.o.Now()
	if sess == nil || now.After(sess.expires) {
		delete(s.sessions, c.Value)
		return nil
	}
	sess.expires = now.Add(sessionTTL)
	return sess
}

func randomHex() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// roleFor is the role a token logs in with, if any.
func (s *Server) roleFor(token string) (Role, bool) {
	if s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AdminToken)) == 1 {
		return RoleAdmin, true
	}
	if s.cfg.ReadToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.ReadToken)) == 1 {
		return RoleRead, true
	}
	return "", false
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	code := r.URL.Query().Get("code")
	if code == "" {
		s.render(w, r, http.StatusOK, "login", loginView{Next: next})
		return
	}
	if s.throttled(w, r, next) {
		return
	}
	if !s.redeem(code) {
		s.limit.fail(clientAddr(r), s.o.Now())
		s.o.Log.Warn("console: sign-in link refused", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "login", loginView{Next: next,
			Error: "That sign-in link is not valid, has expired or was used already: run clawmem ui login for a new one."})
		return
	}
	s.startSession(w, r, RoleAdmin, next)
}

type loginView struct {
	Next  string
	Error string
}

func (s *Server) loginPost(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if s.throttled(w, r, next) {
		return
	}
	role, ok := s.roleFor(r.PostForm.Get("token"))
	if !ok {
		s.limit.fail(clientAddr(r), s.o.Now())
		s.o.Log.Warn("console: login refused", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "login", loginView{Next: next, Error: "That token is not valid."})
		return
	}
	s.startSession(w, r, role, next)
}

// throttled answers 429 while logins from r's address, or all logins, are
// locked out after repeated failures.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request, next string) bool {
	wait := s.limit.wait(clientAddr(r), s.o.Now())
	if wait <= 0 {
		return false
	}
	secs := int((wait + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.render(w, r, http.StatusTooManyRequests, "login", loginView{Next: next,
		Error: fmt.Sprintf("Too many failed logins: try again in %d seconds.", secs)})
	return true
}

// startSession logs the browser in with role and sends it on to next.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, role Role, next string) {
	s.limit.succeed(clientAddr(r))
	id := randomHex()
	s.mu.Lock()
	now := s.o.Now()
	for k, v := range s.sessions {
		if now.After(v.expires) {
			delete(s.sessions, k)
		}
	}
	s.sessions[id] = &session{role: role, csrf: randomHex(), expires: now.Add(sessionTTL)}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// safeNext keeps a post-login destination on this site: an absolute path
// (one leading slash, not two, not a backslash), with no backslash or
// control character even once decoded, which browsers would read as
// another host; anything else is "/".
func safeNext(next string) string {
	dec, err := url.PathUnescape(next)
	if err != nil {
		return "/"
	}
	for _, p := range []string{next, dec} {
		if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\") ||
			strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) {
			return "/"
		}
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// Package httpguard is the one gate in front of every HTTP surface
// clawmem serves (hook ingest, the web console, MCP over HTTP): which
// host names a server answers to, which browser requests it refuses, and
// which bodies it reads. A loopback port is reachable by every local
// process and, through the user's browser, by every web page; these
// checks are what keep a web page out, and a token (the callers') is what
// keeps other local processes out.
package httpguard

import (
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// IsLoopbackHost is clawmem's one loopback rule: "localhost" (any case) or
// a loopback IP (127.0.0.0/8, ::1, also in brackets). host carries no
// port. The empty host (every interface) and every other name count as
// exposed: a name may resolve anywhere.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) is on
// loopback; an address that does not parse is not.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && IsLoopbackHost(host)
}

// Hosts are the names a server answers to in the Host header.
//
// A literal loopback host (localhost, 127.0.0.1, [::1], …) is always
// accepted, with any port: only a process on this machine can send it,
// and a web page rebound by DNS cannot, because the browser sends the
// page's own name. Extra names (configuration) are accepted too. On a
// listener bound to one IP that IP is accepted; on a wildcard listener
// (0.0.0.0, ::, empty host) that is not on loopback, any Host is
// accepted unless Extra names some: the server cannot know the names it
// is reached by, and off loopback its token is what keeps strangers out.
type Hosts struct {
	// Listen is the listener's host:port.
	Listen string
	// Extra are further names (or IPs) clients use, without port.
	Extra []string
}

// Allows reports whether hostport, a request's Host header, names this
// server.
func (h Hosts) Allows(hostport string) bool {
	host := hostOnly(hostport)
	if host == "" {
		return false
	}
	if IsLoopbackHost(host) {
		return true
	}
	for _, e := range h.Extra {
		if strings.EqualFold(strings.TrimSuffix(strings.Trim(e, "[]"), "."), host) {
			return true
		}
	}
	lh, _, err := net.SplitHostPort(h.Listen)
	if err != nil || IsLoopbackHost(lh) {
		return false
	}
	if ip := net.ParseIP(lh); lh == "" || (ip != nil && ip.IsUnspecified()) {
		return len(h.Extra) == 0
	}
	return strings.EqualFold(lh, host)
}

// hostOnly is a Host header's host without port, brackets or trailing
// dot; "" when it is malformed.
func hostOnly(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		host = hostport[1 : len(hostport)-1]
	}
	if strings.ContainsAny(host, "[]/\\@ \t") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return ""
	}
	return strings.TrimSuffix(host, ".")
}

// CheckHost refuses (403) a request whose Host is not one of h's: what a
// DNS-rebinding page sends.
func CheckHost(h Hosts) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !h.Allows(r.Host) {
				Refuse(w, http.StatusForbidden, "host "+quote(r.Host)+" is not one this server answers to "+
					"(a web page reached it through DNS rebinding, or add the name to the allowed hosts)")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CheckBrowser refuses (403) a state-changing request (any method but
// GET, HEAD and OPTIONS) that a browser says comes from another site:
// Sec-Fetch-Site cross-site or same-site, or an Origin other than the
// request's own host. Requests without those headers (curl, hooks,
// scripts) pass: browsers always send at least one of them.
func CheckBrowser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !safeMethod(r.Method) && CrossSite(r) {
			Refuse(w, http.StatusForbidden, "cross-site request refused: a web page may not send this")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CrossSite reports whether a browser marked r as coming from another
// site or origin.
func CrossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return true // "null" (sandboxed frames, file: pages) and anything odd
	}
	return !strings.EqualFold(u.Host, r.Host)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// RequireJSON refuses (415) a request with a body that is not declared
// application/json. A browser can send text/plain, form and multipart
// bodies cross-site without asking; application/json it must ask about
// first (a CORS preflight, which clawmem never grants). A DELETE without
// a body (the HTTP API's, which curl and mem0's clients send bare) carries
// nothing to declare, and a browser must ask before sending any DELETE.
func RequireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bare := r.Method == http.MethodDelete && r.ContentLength == 0 && len(r.TransferEncoding) == 0
		if !safeMethod(r.Method) && !bare {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				Refuse(w, http.StatusUnsupportedMediaType, "send the body as Content-Type: application/json (got "+
					quote(r.Header.Get("Content-Type"))+")")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Chain applies guards to h, the first outermost.
func Chain(h http.Handler, guards ...func(http.Handler) http.Handler) http.Handler {
	for i := len(guards) - 1; i >= 0; i-- {
		h = guards[i](h)
	}
	return h
}

// Refuse answers code with {"error": msg}.
func Refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}

// quote bounds what a refusal echoes of a client's header.
func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

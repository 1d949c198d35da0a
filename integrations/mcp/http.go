package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawmem/clawmem/internal/httpguard"
)

// DefaultHTTPAddr is where `clawmem mcp --http` listens unless told
// otherwise: loopback, next to the hook ingest's 7433 and the web
// console's 7434.
const DefaultHTTPAddr = "127.0.0.1:7435"

// httpSessionTimeout closes sessions idle this long, so clients that go
// away without ending their session do not pile up. A client that comes
// back later is told the session is gone and starts a new one.
const httpSessionTimeout = time.Hour

// CheckHTTPAddr refuses to serve addr beyond loopback without a token:
// whoever reaches the endpoint reads, writes and deletes the agent's
// memories.
func CheckHTTPAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mcp: address %q: %w (want host:port, e.g. %s)", addr, err, DefaultHTTPAddr)
	}
	if token == "" && !httpguard.IsLoopbackHost(host) {
		return fmt.Errorf("mcp: refusing to listen on %q without a token: anyone who can reach it could read and "+
			"delete the agent's memories; set a token (--token or ingest.token) or listen on loopback (%s)", addr, DefaultHTTPAddr)
	}
	return nil
}

// NewHTTPHandler serves srv over MCP's streamable HTTP transport on
// addr. A non-empty token is then required on every request as
// "Authorization: Bearer <token>". A Host other than the server's
// (DNS rebinding) and browsers' cross-site requests are refused, so a web
// page cannot drive a loopback server.
func NewHTTPHandler(srv *sdk.Server, addr, token string, log *slog.Logger) http.Handler {
	h := httpguard.Chain(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Logger: log, SessionTimeout: httpSessionTimeout}),
		httpguard.CheckHost(httpguard.Hosts{Listen: addr}), httpguard.CheckBrowser)
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		// Comparing digests keeps the comparison constant-time whatever
		// the lengths.
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="clawmem"`)
			http.Error(w, "missing or wrong bearer token (Authorization: Bearer <token>)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// shutdownTimeout bounds the wait for open MCP requests and streams at
// shutdown; clients reconnect after.
const shutdownTimeout = 5 * time.Second

// ServeHTTP serves h (NewHTTPHandler's) on addr until ctx ends, then gives
// open requests and streams shutdownTimeout to finish.
func ServeHTTP(ctx context.Context, addr string, h http.Handler, agent string, auth bool, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("mcp listening", "url", "http://"+ln.Addr().String(), "agent", agent, "auth", auth)
	select {
	case err := <-served:
		return fmt.Errorf("mcp: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// Streams still open after the grace period are cut.
		hs.Close()
	}
	return nil
}

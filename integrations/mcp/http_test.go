package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheckHTTPAddr(t *testing.T) {
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7434", "", true},
		{"localhost:7434", "", true},
		{"[::1]:7434", "", true},
		{"127.0.0.2:0", "", true},
		{"0.0.0.0:7434", "", false},
		{":7434", "", false},
		{"192.168.1.20:7434", "", false},
		{"memory.example.com:7434", "", false},
		{"0.0.0.0:7434", "s3cret", true},
		{":7434", "s3cret", true},
		{"7434", "", false},
		{"", "s3cret", false},
	}
	for _, tc := range tests {
		err := CheckHTTPAddr(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckHTTPAddr(%q, token %q) = %v, want ok=%v", tc.addr, tc.token, err, tc.ok)
		}
	}
}

// bearer adds a token to every request, as an MCP client configured with
// an Authorization header does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func httpSession(ctx context.Context, url, token string) (*sdk.ClientSession, error) {
	hc := &http.Client{}
	if token != "" {
		hc.Transport = bearer{token: token, next: http.DefaultTransport}
	}
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	return sdk.NewClient(&sdk.Implementation{Name: "clawmem-test", Version: "0"}, nil).Connect(ctx, tr, nil)
}

func TestHTTPHandler(t *testing.T) {
	srv, err := NewServer(answerCall(testEngine(t)), Options{Agent: "main"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("token", func(t *testing.T) {
		ts := httptest.NewServer(NewHTTPHandler(srv, "127.0.0.1:0", "s3cret", nil))
		defer ts.Close()

		for _, token := range []string{"", "wrong", "s3cret2"} {
			if cs, err := httpSession(ctx, ts.URL, token); err == nil {
				cs.Close()
				t.Errorf("connected with token %q, want refused", token)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("request without a token: %d %q, want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}

		cs, err := httpSession(ctx, ts.URL, "s3cret")
		if err != nil {
			t.Fatalf("connect with the token: %v", err)
		}
		defer cs.Close()
		if _, d := mustCall(t, cs, ToolStore, map[string]any{"text": "The staging database runs Postgres 17"}); d["action"] != "created" {
			t.Fatalf("store over HTTP: %v", d)
		}
		text, d := mustCall(t, cs, ToolRecall, map[string]any{"query": "staging database Postgres"})
		if d["count"] != 1.0 || !strings.Contains(text, "Postgres 17") {
			t.Errorf("recall over HTTP = %q, %v", text, d)
		}
		if res := callTool(t, cs, ToolStore, map[string]any{"text": "x", "importance": 7}); !res.IsError {
			t.Errorf("invalid store over HTTP succeeded: %q", resultText(res))
		}
	})

	t.Run("loopback without token", func(t *testing.T) {
		ts := httptest.NewServer(NewHTTPHandler(srv, "127.0.0.1:0", "", nil))
		defer ts.Close()
		cs, err := httpSession(ctx, ts.URL, "")
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 4 {
			t.Fatalf("tools over HTTP: %v, %v", res, err)
		}

		// A web page the user visits must not reach the loopback server.
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site request: %d, want 403", resp.StatusCode)
		}

		// Nor a page rebound to 127.0.0.1 by DNS: its Host is its own name.
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ = http.NewRequest(method, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
			req.Host = "evil.example"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Origin", "http://evil.example")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s with Host evil.example: %d, want 403", method, resp.StatusCode)
			}
		}
	})
}

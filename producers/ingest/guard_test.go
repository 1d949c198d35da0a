package ingest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/producers/ingest"
)

// The probes of issue 26 against a real HTTP server: a web page's simple
// POST, a local process without the token, a DNS-rebinding page. Each is
// refused with its code and publishes nothing; a hook's request gets in.
func TestHookSurfaceRefusesStrangers(t *testing.T) {
	for _, insecure := range []bool{false, true} {
		name := "token"
		if insecure {
			name = "insecure"
		}
		t.Run(name, func(t *testing.T) {
			e := setup(t, ingest.Config{Insecure: insecure})
			ts := httptest.NewServer(e.h)
			defer ts.Close()
			type probe struct {
				name, method, path string
				hdr                map[string]string
				want               int
			}
			probes := []probe{
				{"cross-site simple post", "POST", "/v1/hooks/agent_end", map[string]string{"Content-Type": "text/plain",
					"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
				{"cross-site simple post, no fetch metadata", "POST", "/v1/hooks/agent_end", map[string]string{"Content-Type": "text/plain"}, 415},
				{"form post with the token", "POST", "/v1/hooks/agent_end", map[string]string{"Content-Type": "application/x-www-form-urlencoded",
					"Authorization": "Bearer " + testToken}, 415},
				{"json from a foreign origin with the token", "POST", "/v1/hooks/agent_end", map[string]string{"Content-Type": "application/json",
					"Origin": "http://evil.example", "Authorization": "Bearer " + testToken}, 403},
				{"foreign host", "POST", "/v1/hooks/agent_end", map[string]string{"Host": "evil.example:7433", "Content-Type": "application/json",
					"Authorization": "Bearer " + testToken}, 403},
				{"rebinding", "POST", "/v1/hooks/agent_end", map[string]string{"Host": "evil.example", "Origin": "http://evil.example",
					"Content-Type": "application/json", "Authorization": "Bearer " + testToken}, 403},
				{"metrics by a foreign host", "GET", "/metrics", map[string]string{"Host": "evil.example"}, 403},
				{"healthz by a foreign host", "GET", "/healthz", map[string]string{"Host": "evil.example"}, 403},
			}
			if !insecure {
				probes = append(probes,
					probe{"no token", "POST", "/v1/hooks/agent_end", map[string]string{"Content-Type": "application/json"}, 401},
					probe{"wrong token", "POST", "/v1/hooks/agent_end", map[string]string{"Content-Type": "application/json",
						"Authorization": "Bearer " + strings.ToUpper(testToken)}, 401},
				)
			}
			for _, p := range probes {
				req, _ := http.NewRequest(p.method, ts.URL+p.path, strings.NewReader(agentEndBody))
				for k, v := range p.hdr {
					if k == "Host" {
						req.Host = v
					}
					req.Header.Set(k, v)
				}
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != p.want || !strings.Contains(string(body), `"error"`) {
					t.Errorf("%s: %d %s, want %d with an error", p.name, resp.StatusCode, body, p.want)
				}
			}
			if n := e.msgs(t); n != 0 {
				t.Fatalf("%d events published by refused requests", n)
			}
			// What a hook sends gets in.
			req, _ := http.NewRequest("POST", ts.URL+"/v1/hooks/agent_end", strings.NewReader(agentEndBody))
			req.Header.Set("Content-Type", "application/json")
			if !insecure {
				req.Header.Set("Authorization", "Bearer "+testToken)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted || e.msgs(t) != 1 {
				t.Fatalf("a hook's post: %d, %d events", resp.StatusCode, e.msgs(t))
			}
		})
	}
}

package httpguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true, "[::1]": true,
		"::ffff:127.0.0.1": true,
		"":                 false, "0.0.0.0": false, "::": false, "10.0.0.5": false, "localhost.evil.example": false,
		"evil.example": false, "127.0.0.1.nip.io": false, "[::1": false, "localhost:7433": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// IsLoopbackAddr is what ingest.insecure is allowed on (config and the
// ingest server both ask it): a listen address whose host is loopback. No
// port, the wildcard host and names that only start like loopback are not.
func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7433": true, "localhost:7433": true, "LOCALHOST:0": true, "[::1]:7433": true, "127.0.0.2:80": true,
		"": false, ":7433": false, "0.0.0.0:7433": false, "[::]:7433": false, "127.0.0.1": false, "[::1]": false,
		"::1:7433": false, "10.0.0.5:7433": false, "localhost.evil.example:7433": false, "127.0.0.1.nip.io:7433": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestHostsAllows(t *testing.T) {
	for _, tc := range []struct {
		listen string
		extra  []string
		host   string
		want   bool
	}{
		{"127.0.0.1:7433", nil, "127.0.0.1:7433", true},
		{"127.0.0.1:7433", nil, "localhost:9999", true},
		{"127.0.0.1:7433", nil, "[::1]:7433", true},
		{"127.0.0.1:7433", nil, "[::1]", true},
		{"127.0.0.1:7433", nil, "localhost.", true},
		{"127.0.0.1:7433", nil, "127.0.0.2", true},
		{"127.0.0.1:7433", nil, "evil.example", false},
		{"127.0.0.1:7433", nil, "evil.example:7433", false},
		{"127.0.0.1:7433", nil, "", false},
		{"127.0.0.1:7433", nil, "127.0.0.1:80:90", false},
		{"127.0.0.1:7433", nil, "evil.example@127.0.0.1", false},
		{"127.0.0.1:7433", []string{"clawmem.lan"}, "CLAWMEM.lan:7433", true},
		{"127.0.0.1:7433", []string{"clawmem.lan"}, "other.lan", false},
		{"10.0.0.5:7433", nil, "10.0.0.5:7433", true},
		{"10.0.0.5:7433", nil, "localhost:7433", true},
		{"10.0.0.5:7433", nil, "10.0.0.6:7433", false},
		{"10.0.0.5:7433", nil, "evil.example", false},
		{"[fd00::5]:7433", nil, "[fd00::5]:7433", true},
		{"0.0.0.0:7433", nil, "clawmem-ingest:7433", true},
		{":7433", nil, "anything.example", true},
		{"0.0.0.0:7433", []string{"ingest.example.com"}, "ingest.example.com", true},
		{"0.0.0.0:7433", []string{"ingest.example.com"}, "evil.example", false},
		{"0.0.0.0:7433", []string{"ingest.example.com"}, "127.0.0.1:7433", true},
	} {
		if got := (Hosts{Listen: tc.listen, Extra: tc.extra}).Allows(tc.host); got != tc.want {
			t.Errorf("listen %s extra %v: Allows(%q) = %v, want %v", tc.listen, tc.extra, tc.host, got, tc.want)
		}
	}
}

// The guards in front of a real server: what a web page can send is
// refused with the right code and never reaches the handler; what a hook
// or script sends gets through.
func TestGuards(t *testing.T) {
	reached := 0
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusAccepted)
	}), CheckHost(Hosts{Listen: "127.0.0.1:0"}), CheckBrowser, RequireJSON)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		method string
		hdr    map[string]string
		want   int
		bare   bool // no body at all
	}{
		{"a hook's post", "POST", map[string]string{"Content-Type": "application/json"}, 202, false},
		{"json with charset", "POST", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 202, false},
		{"same-origin browser post", "POST", map[string]string{"Content-Type": "application/json", "Origin": "%URL%", "Sec-Fetch-Site": "same-origin"}, 202, false},
		{"a GET", "GET", nil, 202, false},
		{"cross-site simple post", "POST", map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, false},
		{"text/plain without browser headers", "POST", map[string]string{"Content-Type": "text/plain"}, 415, false},
		{"form post", "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, false},
		{"no content type", "POST", nil, 415, false},
		{"json from a foreign origin", "POST", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, false},
		{"same-site", "POST", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, 403, false},
		{"null origin", "POST", map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, false},
		{"foreign host", "GET", map[string]string{"Host": "evil.example"}, 403, false},
		{"rebinding", "POST", map[string]string{"Host": "evil.example", "Origin": "http://evil.example", "Content-Type": "application/json"}, 403, false},
		{"a bare DELETE", "DELETE", nil, 202, true},
		{"a DELETE with a text body", "DELETE", map[string]string{"Content-Type": "text/plain"}, 415, false},
		{"a cross-site bare DELETE", "DELETE", map[string]string{"Origin": "https://evil.example"}, 403, true},
		{"a bare POST", "POST", nil, 415, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			var in io.Reader = strings.NewReader(`{}`)
			if tc.bare {
				in = nil
			}
			req, _ := http.NewRequest(tc.method, srv.URL, in)
			for k, v := range tc.hdr {
				v = strings.ReplaceAll(v, "%URL%", srv.URL)
				if k == "Host" {
					req.Host = v
				}
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want >= 400 {
				if reached != before {
					t.Fatal("a refused request reached the handler")
				}
				if !strings.HasPrefix(string(body), `{"error":"`) || resp.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("refusal is not a JSON error: %s", body)
				}
			}
		})
	}
}

func FuzzHostsAllows(f *testing.F) {
	for _, s := range []string{"localhost:7433", "[::1]:1", "evil.example", "127.0.0.1:80:90", "[::1", "", "a@b", "0.0.0.0"} {
		f.Add(s)
	}
	loop := Hosts{Listen: "127.0.0.1:7433"}
	wild := Hosts{Listen: "0.0.0.0:7433", Extra: []string{"clawmem.lan"}}
	f.Fuzz(func(t *testing.T, host string) {
		h := hostOnly(host)
		if loop.Allows(host) && !IsLoopbackHost(h) {
			t.Fatalf("loopback listener allows %q (host %q)", host, h)
		}
		if wild.Allows(host) && !IsLoopbackHost(h) && !strings.EqualFold(h, "clawmem.lan") {
			t.Fatalf("pinned wildcard listener allows %q", host)
		}
		if strings.ContainsAny(h, "/\\@[] \t") {
			t.Fatalf("hostOnly(%q) = %q keeps a separator", host, h)
		}
	})
}

package chaos

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tally tells lost, duplicated and unacknowledged events apart, and a
// result with any of them fails: the scenarios' checks are not vacuous.
func TestTallyFailsOnLostAndDuplicated(t *testing.T) {
	l := NewLoad(Ingest{URL: "http://unused"}, 5, 1, 1)
	for _, i := range []int{0, 1, 2, 3} {
		l.acked[i].Store(true)
		l.nAcked.Add(1)
	}
	// 0 stored once, 1 lost, 2 stored three times, 3 once, 4 (never
	// acknowledged) stored once.
	got := l.tally([]int{1, 0, 3, 1, 1})
	want := Tally{Offered: 5, Acked: 4, Texts: 5, Stored: 3, Lost: 1, Dup: 2, StoredUnacked: 1}
	if got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
	var r Result
	r.checkTally(got)
	r.finish()
	if r.Pass || len(r.Failures) != 3 {
		t.Fatalf("result %+v: want a failure each for the unacknowledged, lost and duplicated events", r)
	}
	var ok Result
	ok.checkTally(l.tally([]int{1, 1, 1, 1, 0}))
	ok.Events.Acked, ok.Events.Offered = 4, 4
	ok.Failures = nil
	ok.checkTally(*ok.Events)
	ok.finish()
	if !ok.Pass {
		t.Fatalf("all stored once: %+v", ok)
	}
	if !strings.Contains(textOf(t, r), "lost 1 dup 2") {
		t.Fatalf("text: %s", textOf(t, r))
	}
}

func textOf(t *testing.T, r Result) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A fake provider does what its fault says: half its answers are 503s, a
// hang is released when the fault changes, garbage is not JSON, and gone
// refuses connections until it comes back on the same port.
func TestFakeProviderFaults(t *testing.T) {
	f, err := newFake("test", 1, func(w http.ResponseWriter, _ []byte) { writeJSON(w, map[string]string{"ok": "yes"}) })
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func() (int, string, error) {
		resp, err := hc.Post(f.URL(), "application/json", strings.NewReader("{}"))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 256)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String(), nil
	}
	if code, body, err := get(); err != nil || code != 200 || !strings.Contains(body, "yes") {
		t.Fatalf("healthy: %d %q %v", code, body, err)
	}
	f.Set(FailHalf)
	fails := 0
	for range 100 {
		if code, _, _ := get(); code == http.StatusServiceUnavailable {
			fails++
		}
	}
	if fails < 25 || fails > 75 {
		t.Fatalf("fail 50%%: %d of 100 failed", fails)
	}
	f.Set(Hang)
	done := make(chan int, 1)
	go func() { code, _, _ := get(); done <- code }()
	select {
	case code := <-done:
		t.Fatalf("a hanging fake answered %d", code)
	case <-time.After(300 * time.Millisecond):
	}
	f.Set(Garbage)
	if code := <-done; code != 200 {
		t.Fatalf("the hang released into garbage answered %d", code)
	}
	if _, body, _ := get(); strings.Contains(body, "yes") || !strings.HasPrefix(body, "{") {
		t.Fatalf("garbage: %q", body)
	}
	f.Set(Gone)
	if _, _, err := get(); err == nil {
		t.Fatal("gone: answered")
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(f.URL(), "http://")); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("gone: %v, want connection refused", err)
	}
	if err := f.Set(Healthy); err != nil {
		t.Fatal(err)
	}
	if code, _, err := get(); err != nil || code != 200 {
		t.Fatalf("back: %d %v", code, err)
	}
}

// The soak's memory bound: per memory stored when the texts are distinct,
// flat (×1.15 + 16 MB) when they cycle; a store that does not grow allows
// no growth per memory.
func TestSoakRSSBound(t *testing.T) {
	per := soakPerMemory(384) / (1 << 20) // MB
	for _, tc := range []struct {
		name     string
		distinct bool
		g        rssGrowth
		fail     bool
	}{
		{"distinct, within", true, rssGrowth{MB: [2]float64{100, 100 + 9000*per + soakCachesMB - 1}, Memories: [2]float64{3000, 12000}}, false},
		{"distinct, past", true, rssGrowth{MB: [2]float64{100, 100 + 9000*per + soakCachesMB + 1}, Memories: [2]float64{3000, 12000}}, true},
		{"distinct, the issue's 5.8 KB a memory", true, rssGrowth{MB: [2]float64{102, 102 + 9600*5800.0/(1<<20)}, Memories: [2]float64{2400, 12000}}, true},
		{"distinct, nothing stored", true, rssGrowth{MB: [2]float64{100, 100 + soakCachesMB + 1}, Memories: [2]float64{3000, 3000}}, true},
		{"cycling, flat", false, rssGrowth{MB: [2]float64{100, 130}, Memories: [2]float64{2400, 2400}}, false},
		{"cycling, grew", false, rssGrowth{MB: [2]float64{100, 132}, Memories: [2]float64{2400, 2400}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f := tc.g.check(tc.distinct, 384); (f != "") != tc.fail {
				t.Fatalf("check = %q, want a failure: %v", f, tc.fail)
			}
		})
	}
}

// TestPooledLoadTurns: a distinct load puts every event in a session of its
// own; a pooled one cycles its sessions with its texts, every round a new
// run (a new Msg-Id) and, for each session, a text other than its last one
// (capture reads it as new), every text once a round.
func TestPooledLoadTurns(t *testing.T) {
	d := NewLoad(Ingest{URL: "http://unused"}, 6, 1, 1)
	for i := range 6 {
		text, session, run := d.turn(i)
		if text != i || session != "chaos-"+strconv.Itoa(i) || run != "run-1" {
			t.Fatalf("distinct event %d: text %d, session %s, run %s", i, text, session, run)
		}
	}
	const pool = 4
	p := NewPooledLoad(Ingest{URL: "http://unused"}, 20, pool, 1, 1)
	last := map[string]int{}
	runs := map[string]bool{}
	for round := range 5 {
		seen := map[int]bool{}
		for s := range pool {
			text, session, run := p.turn(round*pool + s)
			if session != "chaos-"+strconv.Itoa(s) {
				t.Fatalf("event %d in session %s, want chaos-%d", round*pool+s, session, s)
			}
			if prev, ok := last[session]; ok && prev == text {
				t.Fatalf("round %d: session %s repeats its last text %d", round, session, text)
			}
			if runs[session+"/"+run] {
				t.Fatalf("round %d: session %s run %s again", round, session, run)
			}
			last[session], runs[session+"/"+run], seen[text] = text, true, true
		}
		if len(seen) != pool {
			t.Fatalf("round %d used texts %v, want each of %d once", round, seen, pool)
		}
	}
}

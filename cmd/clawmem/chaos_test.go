package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/cmd/clawmem/internal/chaos"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/schemas"
)

// The hostile corpus (testdata/chaos, plus 10 MB bodies, 100,000-deep
// nesting and 2 MB memories) against a real `clawmem up`: every bad body
// to the hook ingest, the query operations, raw subjects, import files,
// config files, MCP sessions and the HTTP API is refused with a 4xx, an error reply, a
// failed row, a config error or a JSON-RPC or tool error; nothing is
// stored, and the instance still answers and runs.
func TestHostileCorpus(t *testing.T) {
	in := startUp(t, t.TempDir())
	nc, err := adminConn(in.dir, in.info.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The corpus names ffffffff-… as another agent's memory: it is one.
	res, err := client.NewNATS(nc).Call(context.Background(), schemas.OpImport, "", schemas.ImportRequest{NoDedup: true, Memories: []schemas.Memory{
		{ID: "ffffffff-ffff-4fff-8fff-ffffffffffff", Text: "Other's private note: the build flag is --fast", Scope: "agent:other"},
		{ID: "11111111-1111-4111-8111-111111111111", Text: "Main's note: standups are at ten", Scope: "agent:main"},
	}})
	if err != nil || res.IsError {
		t.Fatalf("import: %v %+v", err, res)
	}
	corpus, err := chaos.LoadCorpus("../../testdata/chaos/hostile.json")
	if err != nil {
		t.Fatal(err)
	}
	token, err := authdir.Read(in.dir, authdir.IngestToken)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chaos.Hostile(context.Background(), chaos.Target{IngestURL: in.info.IngestURL, IngestToken: token, NC: nc, DataDir: in.dir}, corpus)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	t.Log(b.String())
	if !rep.Pass || rep.Before != 2 || rep.After != 2 || rep.Tried != len(corpus) || in.cmd.ProcessState != nil {
		t.Fatalf("%s\n%s", b.String(), in.logs.String())
	}
	surfaces := map[string]int{}
	for _, o := range rep.Outcomes {
		surfaces[o.Surface]++
	}
	// The HTTP attacks are stopped by the guard or the token, before the
	// body is read.
	for _, o := range rep.Outcomes {
		if strings.HasPrefix(o.Name, "http: ") && !strings.HasPrefix(o.Answer, "401 ") && !strings.HasPrefix(o.Answer, "403 ") && !strings.HasPrefix(o.Answer, "415 ") {
			t.Errorf("%s: %s, want 401, 403 or 415", o.Name, o.Answer)
		}
	}
	if want := map[string]int{"ingest": 23, "hook": 9, "query": 18, "subject": 5, "import": 25, "config": 28, "mcp": 26, "http": 38}; !maps.Equal(surfaces, want) {
		t.Fatalf("entries by surface %v, want %v", surfaces, want)
	}
	// The same through the command, which finds the instance by its run
	// file.
	code, out, errOut := runCLI(t, "chaos", "hostile", "--data-dir", in.dir, "--corpus", "../../testdata/chaos/hostile.json")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d tried, %d refused", rep.Tried, rep.Tried)) || !strings.Contains(out, "pass") {
		t.Fatalf("clawmem chaos hostile: %d %s %s", code, out, errOut)
	}
}

// The kill loop, provider faults and soak, small, against real `clawmem
// up` processes, through the commands: each passes, and --json carries
// the tally.
func TestChaosScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up for most of a minute")
	}
	bin := clawmemBinary(t)
	for _, args := range [][]string{
		{"kill", "--events", "150", "--rate", "50", "--kills", "2"},
		{"providers", "--phase", "3s", "--outage", "5s", "--rate", "10", "--poison", "2"},
		{"soak", "--duration", "35s", "--rate", "20", "--recall-rate", "5"},
		{"nats", "--events", "200", "--rate", "40", "--restarts", "1", "--full-mb", "2", "--flood", "300"},
		{"disk", "--size-mb", "96", "--events", "200", "--rate", "20", "--full", "8s"},
		{"cluster", "--events", "200", "--rate", "20", "--restarts", "2"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"chaos", "--json", "--bin", bin, "--scratch", t.TempDir()}, args...)...)
			var s chaos.Suite
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errOut)
			}
			if args[0] == "disk" && os.Geteuid() != 0 {
				if code != 0 || s.Results[0].Skipped == "" {
					t.Fatalf("disk without root: want skipped\n%s", out)
				}
				return
			}
			if code != 0 || !s.Pass || len(s.Results) != 1 || s.Results[0].Events == nil {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if e := s.Results[0].Events; e.Acked != e.Offered || e.Lost != 0 || e.Dup != 0 || e.Stored != e.Texts {
				t.Fatalf("tally %+v", e)
			}
			t.Logf("%s: %s", s.Results[0].Scenario, s.Results[0].Summary)
		})
	}
}

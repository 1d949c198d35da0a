package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/internal/chaos"
	"github.com/clawmem/clawmem/schemas"
)

// The hostile corpus (testdata/chaos, plus a 10 MB body, 100,000-deep
// nesting and a 2 MB memory) against a real `clawmem up`: every bad body
// to the hook ingest, the query operations and raw subjects is refused
// with a 4xx or an error reply, nothing is stored, and the instance still
// answers and runs.
func TestHostileCorpus(t *testing.T) {
	in := startUp(t, t.TempDir())
	nc, err := nats.Connect(in.info.NATSURL)
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
	rep, err := chaos.Hostile(context.Background(), chaos.Target{IngestURL: in.info.IngestURL, NC: nc}, corpus)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	t.Log(b.String())
	if !rep.Pass || rep.Before != 2 || rep.Tried != len(corpus) || in.cmd.ProcessState != nil {
		t.Fatalf("%s\n%s", b.String(), in.logs.String())
	}
	// The same through the command, which finds the instance by its run
	// file.
	code, out, errOut := runCLI(t, "chaos", "hostile", "--data-dir", in.dir, "--corpus", "../../testdata/chaos/hostile.json")
	if code != 0 || !strings.Contains(out, "37 tried, 37 refused") || !strings.Contains(out, "pass") {
		t.Fatalf("clawmem chaos hostile: %d %s %s", code, out, errOut)
	}
}

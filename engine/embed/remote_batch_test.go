package embed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

func TestRemoteBatching(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.BatchSize = 3
	cfg.TaskPassage = "retrieval.passage"
	e := newTestRemote(t, cfg)

	texts := make([]string, 8)
	for i := range texts {
		texts[i] = fmt.Sprintf("memory number %d", i)
	}
	vecs, err := e.EmbedPassages(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
			t.Errorf("vector %d is not %q's", i, text)
		}
	}
	sent := f.requests()
	var sizes []int
	var all []string
	for _, req := range sent {
		sizes = append(sizes, len(req.Input))
		all = append(all, req.Input...)
		checkWireRequest(t, req, "retrieval.passage", nil, false, testDims)
	}
	if !slices.Equal(sizes, []int{3, 3, 2}) || !slices.Equal(all, texts) {
		t.Fatalf("batches %v carrying %q, want [3 3 2] in input order", sizes, all)
	}
}

func TestRemoteBatchSendsOnlyDistinctMisses(t *testing.T) {
	f := newFakeAPI(t, testDims)
	e := newTestRemote(t, remoteConfigFor(t, f))
	ctx := context.Background()
	if _, err := e.EmbedPassage(ctx, "cached"); err != nil {
		t.Fatal(err)
	}
	texts := []string{"new one", "cached", "new two", "new one"}
	vecs, err := e.EmbedPassages(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
			t.Errorf("vector %d is not %q's", i, text)
		}
	}
	sent := f.requests()
	if len(sent) != 2 || !slices.Equal(sent[1].Input, []string{"new one", "new two"}) {
		t.Fatalf("second request carried %q, want only the two distinct misses", sent[len(sent)-1].Input)
	}
	vecs[0][0] = 99
	if vecs[3][0] == 99 {
		t.Fatal("duplicate inputs must not share a backing array")
	}
}

func TestRemoteEmptyBatch(t *testing.T) {
	f := newFakeAPI(t, testDims)
	vecs, err := newTestRemote(t, remoteConfigFor(t, f)).EmbedPassages(context.Background(), nil)
	if err != nil || len(vecs) != 0 || f.count() != 0 {
		t.Fatalf("got %d vectors, err %v, %d requests; want none", len(vecs), err, f.count())
	}
}

func TestRemoteEmptyText(t *testing.T) {
	f := newFakeAPI(t, testDims)
	e := newTestRemote(t, remoteConfigFor(t, f))
	ctx := context.Background()
	if _, err := e.EmbedQuery(ctx, " \n"); !errors.Is(err, ErrEmptyText) || err.Error() != "Cannot embed empty text" {
		t.Errorf("EmbedQuery error = %v", err)
	}
	if _, err := e.EmbedPassage(ctx, ""); !errors.Is(err, ErrEmptyText) {
		t.Errorf("EmbedPassage error = %v", err)
	}
	if _, err := e.EmbedPassages(ctx, []string{"ok", "\t"}); !errors.Is(err, ErrEmptyText) || !strings.Contains(err.Error(), "passage 1") {
		t.Errorf("EmbedPassages error = %v, want ErrEmptyText naming passage 1", err)
	}
	if f.count() != 0 {
		t.Fatalf("empty text reached the server %d times", f.count())
	}
}

func TestRemoteRepliesOutOfOrder(t *testing.T) {
	f := newFakeAPI(t, testDims)
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		writeEmbeddings(w, req, testDims, true)
	}
	texts := []string{"first", "second", "third"}
	vecs, err := newTestRemote(t, remoteConfigFor(t, f)).EmbedPassages(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
			t.Errorf("vector %d is not %q's", i, text)
		}
	}
}

func TestRemoteFailedBatchKeepsEarlierBatches(t *testing.T) {
	f := newFakeAPI(t, testDims)
	var calls int
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		calls++                                        // requests are sequential
		if calls >= 2 && calls <= 2+len(retryDelays) { // the second batch, and each of its tries
			http.Error(w, "flaky", http.StatusBadGateway)
			return
		}
		writeEmbeddings(w, req, testDims, false)
	}
	cfg := remoteConfigFor(t, f)
	cfg.BatchSize = 2
	e := newTestRemote(t, cfg)
	texts := []string{"a", "b", "c", "d"}
	_, err := e.EmbedPassages(context.Background(), texts)
	if err == nil || !strings.Contains(err.Error(), "uncached texts 3-4 of 4") || !strings.Contains(err.Error(), "HTTP 502") {
		t.Fatalf("error = %v, want the failing batch and status named", err)
	}
	if _, err := e.EmbedPassages(context.Background(), texts); err != nil {
		t.Fatal(err)
	}
	sent := f.requests()
	if len(sent) != 3+len(retryDelays) || !slices.Equal(sent[len(sent)-1].Input, []string{"c", "d"}) {
		t.Fatalf("retry sent %q, want only the batch that failed", sent[len(sent)-1].Input)
	}
}

// A provider's passing failure (here a 503, then a garbled reply) is
// tried again at once; a refusal (400) is not.
func TestRemoteRetriesPassingFailures(t *testing.T) {
	f := newFakeAPI(t, testDims)
	var calls int
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		calls++
		switch calls {
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			io.WriteString(w, "{garbled")
		case 4:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"input too long"}}`)
		default:
			writeEmbeddings(w, req, testDims, false)
		}
	}
	e := newTestRemote(t, remoteConfigFor(t, f))
	if _, err := e.EmbedQuery(context.Background(), "first"); err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success on the third", err, calls)
	}
	if _, err := e.EmbedQuery(context.Background(), "second"); err == nil || calls != 4 || errors.Is(err, schemas.ErrUnavailable) {
		t.Fatalf("err %v after %d calls, want the 400 at once, not marked unavailable", err, calls)
	}
}

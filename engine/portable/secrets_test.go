package portable

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/redact"
)

// TestImportSecrets: a row holding a credential is imported redacted (its
// vector, made from the text with the key, dropped and the text embedded
// anew), failed with a reason naming the kind (refuse), or kept (off).
func TestImportSecrets(t *testing.T) {
	const key = "AKIAFAKE2345ABCD6789"
	text := "The backup job signs in with access key " + key
	for _, mode := range []redact.Mode{redact.ModeRedact, redact.ModeRefuse, redact.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			st := testStore(t)
			emb := newCountingEmbedder(t)
			vec := make([]float32, testDims)
			vec[0] = 1
			r := rec(1, uuidN(1), text, "global", vec)
			r.Memory.Metadata = json.RawMessage(`{"note":"db password: Fake-Pw-8842!x"}`)
			res, err := NewImporter(st, emb, ImportOptions{Secrets: mode}).Import(context.Background(), []Record{r})
			if err != nil {
				t.Fatal(err)
			}
			if mode == redact.ModeRefuse {
				if res[0].Status != Failed || !strings.Contains(res[0].Reason, "aws-access-key") || strings.Contains(res[0].Reason, key) {
					t.Fatalf("refuse: %+v", res[0])
				}
				return
			}
			if res[0].Status != Imported {
				t.Fatalf("%+v", res[0])
			}
			m, err := st.Get(context.Background(), uuidN(1), engine.AllScopes())
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case redact.ModeRedact:
				if m.Text != "The backup job signs in with access key [REDACTED:aws-access-key]" || strings.Contains(string(m.Metadata), "Fake-Pw") ||
					emb.texts.Load() != 1 || m.Vector[0] == 1 {
					t.Errorf("redact: %q %s, %d embedded", m.Text, m.Metadata, emb.texts.Load())
				}
			case redact.ModeOff:
				if m.Text != text || emb.texts.Load() != 0 {
					t.Errorf("off: %q, %d embedded", m.Text, emb.texts.Load())
				}
			}
		})
	}
}

package distill

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine/redact"
)

// fakeDBPassword is a credential said in a session (fake, shaped like one).
const fakeDBPassword = "Fake-Pw-8842!x"

// TestTranscriptRedactedBeforeTheModel: what the map calls send holds no
// secret of the transcript unless secrets.mode is off, and no lesson
// carries one.
func TestTranscriptRedactedBeforeTheModel(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	msgs = append(msgs, Message{Role: RoleUser, Text: "We decided the staging db password is " + fakeDBPassword + " until the migration ends."})
	for _, mode := range []redact.Mode{redact.ModeRedact, redact.ModeRefuse, redact.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			fake, srv := newFakeServer(t, ProviderOpenAI, nil)
			res, err := New(Config{Secrets: mode}, newTestLLM(t, ProviderOpenAI, srv.URL, 0), localEmbedder(t)).Distill(context.Background(), msgs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			requests, _ := fake.stats()
			sent := false
			for i := range requests {
				b, _ := json.Marshal(fake.body(i))
				sent = sent || strings.Contains(string(b), fakeDBPassword)
			}
			if sent != (mode == redact.ModeOff) {
				t.Errorf("the password reached the model: %v (%d requests)", sent, requests)
			}
			for _, l := range res.Lessons {
				if strings.Contains(l.Text, fakeDBPassword) {
					t.Errorf("lesson holds the password: %q", l.Text)
				}
			}
		})
	}
}

// TestExtractiveDistillerRedacts: the rule-based distiller keeps the
// lesson and its evidence, with the secret replaced.
func TestExtractiveDistillerRedacts(t *testing.T) {
	msgs := []Message{{N: 1, Role: RoleUser, Text: "I decided to keep the deploy token " + "ghp_FAKE1234567890abcdefGHIJKLmnopqrstuv" + " in the CI vault from now on"}}
	res, err := New(Config{}, nil, nil).Distill(context.Background(), msgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lessons) != 1 || !strings.Contains(res.Lessons[0].Text, "[REDACTED:github-token]") ||
		strings.Contains(res.Lessons[0].Evidence[0].Quote, "ghp_") {
		t.Fatalf("lessons %+v", res.Lessons)
	}
	if msgs[0].Text == res.Lessons[0].Text || !strings.Contains(msgs[0].Text, "ghp_") {
		t.Errorf("the caller's messages were changed: %q", msgs[0].Text)
	}
}

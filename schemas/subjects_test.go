package schemas

import (
	"errors"
	"testing"
)

func TestSubjectsRoundTrip(t *testing.T) {
	kind, agent, err := ParseEventSubject(EventSubject(KindAgentEnd, "main"))
	if err != nil || kind != KindAgentEnd || agent != "main" {
		t.Fatalf("event subject: %v %q %v", kind, agent, err)
	}
	agent, tok, err := ParseTranscriptSubject(TranscriptSubject("main", "s.1/x"))
	if err != nil || agent != "main" || tok != "s_1_x" {
		t.Fatalf("transcript subject: %q %q %v", agent, tok, err)
	}
	for _, bad := range []string{"", "clawmem.transcript", "clawmem.transcript.main", "clawmem.transcript.a*b.s",
		"clawmem.transcript.main.s.t", "clawmem.events.agent_end.main", "clawmem.transcript.main."} {
		if _, _, err := ParseTranscriptSubject(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseTranscriptSubject(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	for _, bad := range []string{"clawmem.events.nope.main", "clawmem.events.agent_end.a.b", "clawmem.events.agent_end.*", "x"} {
		if _, _, err := ParseEventSubject(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseEventSubject(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if SubjectToken("") != "_" || SubjectToken("a>b*c") != "a_b_c" {
		t.Error("SubjectToken does not sanitise")
	}
}

func FuzzParseTranscriptSubject(f *testing.F) {
	f.Add("clawmem.transcript.main.s1")
	f.Add("clawmem.transcript..")
	f.Fuzz(func(t *testing.T, s string) {
		agent, tok, err := ParseTranscriptSubject(s)
		if err != nil {
			return
		}
		if TranscriptSubject(agent, tok) != s {
			t.Fatalf("%q parsed as %q/%q, which does not rebuild it", s, agent, tok)
		}
	})
}

// The writers' subjects are part of the wire (the NATS permissions keep
// agents off them), so they are pinned here.
func TestWriterSubject(t *testing.T) {
	if got := WriterSubject(3, "main", OpStore); got != "clawmem.writer.v1.3.main.store" {
		t.Errorf("agent write: %q", got)
	}
	if got := WriterSubject(0, "", OpImport); got != "clawmem.writer.admin.v1.0.import" {
		t.Errorf("admin write: %q", got)
	}
}

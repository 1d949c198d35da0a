package distill

import (
	"strings"
	"testing"
)

func TestSessionSummary(t *testing.T) {
	msgs := []Message{
		{N: 1, Role: RoleUser, Text: "We use Postgres 16 for the blog.", Timestamp: 1777885942000},
		{N: 2, Role: RoleAssistant, Text: "Noted,\n  Postgres   16."},
		{N: 3, Role: RoleUser, Text: "hi"},
		{N: 4, Role: RoleUser, Text: strings.Repeat("long ", 100)},
		{N: 5, Role: RoleAssistant, Text: "HEARTBEAT_OK"},
	}
	cases := []struct {
		name  string
		msgs  []Message
		lastN int
		want  string
	}{
		{name: "empty", want: ""},
		{name: "only noise", msgs: msgs[2:3], want: ""},
		{name: "last two kept", msgs: msgs[:2], lastN: 5,
			want: "Session summary (2026-05-04), last 2 of 2 messages:\nUser: We use Postgres 16 for the blog.\nAssistant: Noted, Postgres 16."},
		{name: "last n, noise skipped, long cut", msgs: msgs, lastN: 2,
			want: "Session summary, last 2 of 5 messages:\nAssistant: Noted, Postgres 16.\nUser: " + strings.TrimSpace(strings.Repeat("long ", 60))[:299] + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SessionSummary(c.msgs, c.lastN); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	fixture := loadFixture(t, "english_debug_session.jsonl")
	s := SessionSummary(fixture, 0)
	if n := strings.Count(s, "\n"); n != DefaultSummaryMessages || len(s) > 8000 {
		t.Errorf("default summary has %d lines, %d bytes", n, len(s))
	}
}

package watcher

import (
	"strings"
	"testing"
)

func TestParseFileName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		want sessionFile
	}{
		{"abc.jsonl", true, sessionFile{Name: "abc.jsonl", Original: "abc.jsonl", Session: "abc"}},
		{"abc-topic-42.jsonl", true, sessionFile{Name: "abc-topic-42.jsonl", Original: "abc-topic-42.jsonl", Session: "abc-topic-42", Topic: true}},
		{"abc.jsonl.reset.2026-01-02T10-00-00.000Z", true,
			sessionFile{Name: "abc.jsonl.reset.2026-01-02T10-00-00.000Z", Original: "abc.jsonl", Session: "abc"}},
		{"abc-topic-7.jsonl.deleted.2026-01-02T10-00-00.000Z", true,
			sessionFile{Name: "abc-topic-7.jsonl.deleted.2026-01-02T10-00-00.000Z", Original: "abc-topic-7.jsonl", Session: "abc-topic-7", Topic: true}},
		{"abc.jsonl.reset.x.jsonl.deleted.y", true, sessionFile{Name: "abc.jsonl.reset.x.jsonl.deleted.y", Original: "abc.jsonl", Session: "abc"}},
		{"-topic-.jsonl", true, sessionFile{Name: "-topic-.jsonl", Original: "-topic-.jsonl", Session: "-topic-"}},
		{"sessions.json", false, sessionFile{}},
		{".jsonl", false, sessionFile{}},
		{".hidden.jsonl", false, sessionFile{}},
		{"abc.jsonl.reset.", false, sessionFile{}},
		{".jsonl.reset.x", false, sessionFile{}},
		{"abc.jsonl.tmp", false, sessionFile{}},
		{"abc.jsonl.lock", false, sessionFile{}},
		{"abc.jsonl.reset.x.jsonl", false, sessionFile{}},
		{"", false, sessionFile{}},
	}
	for _, tt := range tests {
		got, ok := parseFileName(tt.name)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseFileName(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseFileName(f *testing.F) {
	for _, s := range []string{"abc.jsonl", "a-topic-b.jsonl", "a.jsonl.reset.2026", "a.jsonl.deleted.x",
		"a.jsonl.reset.b.jsonl", ".jsonl", "x", "a.jsonl.deleted.", "é.jsonl.reset.\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		sf, ok := parseFileName(name)
		if !ok {
			return
		}
		if sf.Name != name || !strings.HasPrefix(name, sf.Original) || !strings.HasSuffix(sf.Original, jsonlExt) {
			t.Fatalf("%q: %+v", name, sf)
		}
		if sf.Session == "" || sf.Session+jsonlExt != sf.Original {
			t.Fatalf("%q: session %q of %q", name, sf.Session, sf.Original)
		}
		live, ok := parseFileName(sf.Original)
		if !ok || live.rotated() || live.Session != sf.Session || live.Topic != sf.Topic {
			t.Fatalf("%q: original %q parses as %+v, %v", name, sf.Original, live, ok)
		}
		if sf.rotated() {
			suffix := name[len(sf.Original):]
			if !strings.HasPrefix(suffix, ".reset.") && !strings.HasPrefix(suffix, ".deleted.") {
				t.Fatalf("%q: rotated with suffix %q", name, suffix)
			}
		}
	})
}

func TestMsgIDRoundTrip(t *testing.T) {
	id := msgID("main", "ABC234", 1234)
	if id != "transcript.main.ABC234.1234" {
		t.Fatalf("msgID = %q", id)
	}
	for _, bad := range []string{"", "transcript.", "transcript.main.x", "transcript.main.x.-1", "transcript..x.1",
		"transcript.main.x.1.2", "events.main.x.1", "transcript.main..1"} {
		if _, _, _, ok := parseMsgID(bad); ok {
			t.Errorf("parseMsgID(%q) accepted", bad)
		}
	}
}

func FuzzMsgID(f *testing.F) {
	f.Add("main", "ABCDEF", int64(0))
	f.Add("a-b_c", "Z", int64(1<<62))
	f.Fuzz(func(t *testing.T, agent, fileID string, offset int64) {
		a, fid, off, ok := parseMsgID(msgID(agent, fileID, offset))
		valid := agent != "" && fileID != "" && offset >= 0 && !strings.Contains(agent, ".") && !strings.Contains(fileID, ".")
		if ok != valid || ok && (a != agent || fid != fileID || off != offset) {
			t.Fatalf("(%q, %q, %d) -> (%q, %q, %d, %v)", agent, fileID, offset, a, fid, off, ok)
		}
	})
}

func TestRecordKeyIsValid(t *testing.T) {
	k := recordKey("main", "a b/c:*>.jsonl")
	if len(k) != len("main.")+32 || strings.ContainsAny(k[len("main."):], ".*> ") {
		t.Fatalf("key %q", k)
	}
	if recordKey("main", "x.jsonl") == recordKey("other", "x.jsonl") || recordKey("main", "x.jsonl") == recordKey("main", "y.jsonl") {
		t.Fatal("keys collide")
	}
}

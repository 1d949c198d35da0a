package distill

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// sized makes n alternating user/assistant messages, each rendered in
// exactly width characters ("[U1] xxx…").
func sized(n, width int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		role := RoleUser
		if i%2 == 1 {
			role = RoleAssistant
		}
		m := Message{N: i + 1, Role: role}
		m.Text = strings.Repeat("x", width-len(Label(m))-1)
		msgs[i] = m
	}
	return msgs
}

func TestRender(t *testing.T) {
	cases := []struct {
		m    Message
		want string
	}{
		{Message{N: 12, Role: RoleUser, Text: "hello"}, "[U12] hello"},
		{Message{N: 13, Role: RoleAssistant, Text: "hi\nthere"}, "[A13] hi\nthere"},
	}
	for _, c := range cases {
		if got := Render(c.m); got != c.want {
			t.Errorf("Render = %q, want %q", got, c.want)
		}
	}
}

func TestSplitChunks(t *testing.T) {
	cases := []struct {
		name      string
		msgs      []Message
		opts      ChunkOptions
		spans     [][2]int // first and last message number of each chunk
		overlaps  []int
		uncovered int
	}{
		{name: "empty", msgs: nil, opts: ChunkOptions{}},
		{name: "fits in one", msgs: sized(20, 50), opts: ChunkOptions{}, spans: [][2]int{{1, 20}}, overlaps: []int{0}},
		// 99-char lines: three fit in 300; the overlap is capped at half a chunk, so one message.
		{name: "overlap capped at half a chunk", msgs: sized(10, 99), opts: ChunkOptions{MaxChars: 300, OverlapMsgs: 3},
			spans: [][2]int{{1, 3}, {3, 5}, {5, 7}, {7, 9}, {9, 10}}, overlaps: []int{0, 1, 1, 1, 1}},
		{name: "overlap of two", msgs: sized(10, 49), opts: ChunkOptions{MaxChars: 300, OverlapMsgs: 2},
			spans: [][2]int{{1, 6}, {5, 10}}, overlaps: []int{0, 2}},
		{name: "no overlap", msgs: sized(10, 99), opts: ChunkOptions{MaxChars: 300, OverlapMsgs: -1},
			spans: [][2]int{{1, 3}, {4, 6}, {7, 9}, {10, 10}}, overlaps: []int{0, 0, 0, 0}},
		{name: "max chunks leaves the rest out", msgs: sized(10, 99), opts: ChunkOptions{MaxChars: 300, OverlapMsgs: -1, MaxChunks: 2},
			spans: [][2]int{{1, 3}, {4, 6}}, overlaps: []int{0, 0}, uncovered: 4},
		{name: "tiny limit raised to the minimum", msgs: sized(3, 99), opts: ChunkOptions{MaxChars: 10, OverlapMsgs: -1},
			spans: [][2]int{{1, 1}, {2, 2}, {3, 3}}, overlaps: []int{0, 0, 0}},
		{name: "long message is cut, not dropped", msgs: []Message{{N: 1, Role: RoleUser, Text: "short"}, {N: 2, Role: RoleAssistant, Text: strings.Repeat("long ", 200)}, {N: 3, Role: RoleUser, Text: "after"}},
			opts: ChunkOptions{MaxChars: 100, OverlapMsgs: 1},
			// Neither neighbour of the cut message leaves room to repeat it.
			spans: [][2]int{{1, 1}, {2, 2}, {3, 3}}, overlaps: []int{0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chunks, uncovered := SplitChunks(c.msgs, c.opts)
			var spans [][2]int
			var overlaps []int
			for i, ch := range chunks {
				spans = append(spans, [2]int{ch.First(), ch.Last()})
				overlaps = append(overlaps, ch.Overlap)
				checkChunk(t, ch, i, c.opts.withDefaults().MaxChars)
			}
			if !reflect.DeepEqual(spans, c.spans) || !reflect.DeepEqual(overlaps, c.overlaps) || uncovered != c.uncovered {
				t.Errorf("spans %v overlaps %v uncovered %d; want %v %v %d", spans, overlaps, uncovered, c.spans, c.overlaps, c.uncovered)
			}
		})
	}
}

// checkChunk asserts a chunk's text is its messages rendered, within the limit.
func checkChunk(t *testing.T, ch Chunk, index, maxChars int) {
	t.Helper()
	if ch.Index != index {
		t.Errorf("chunk %d has index %d", index, ch.Index)
	}
	if n := utf8.RuneCountInString(ch.Text); n > maxChars {
		t.Errorf("chunk %d is %d chars, limit %d", index, n, maxChars)
	}
	lines := strings.Split(ch.Text, "\n")
	if len(lines) != len(ch.Messages) {
		t.Fatalf("chunk %d: %d lines for %d messages", index, len(lines), len(ch.Messages))
	}
	for i, m := range ch.Messages {
		if !strings.HasPrefix(lines[i], Label(m)+" ") {
			t.Errorf("chunk %d line %d = %.20q, want label %s", index, i, lines[i], Label(m))
		}
		if full := Render(m); lines[i] != full && !strings.HasSuffix(lines[i], cutMark) {
			t.Errorf("chunk %d line %d neither whole nor marked as cut", index, i)
		}
	}
}

func TestSplitChunksFixtureCoversEveryMessage(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	chunks, uncovered := SplitChunks(msgs, ChunkOptions{MaxChars: 2500})
	seen := 0
	for i, ch := range chunks {
		checkChunk(t, ch, i, 2500)
		if ch.First() > seen+1 || ch.Last() <= seen {
			t.Fatalf("chunk %d spans %d-%d after message %d", i, ch.First(), ch.Last(), seen)
		}
		if i > 0 && ch.Overlap == 0 {
			t.Errorf("chunk %d has no overlap", i)
		}
		seen = ch.Last()
	}
	if seen != len(msgs) || uncovered != 0 {
		t.Errorf("covered up to %d of %d, uncovered %d", seen, len(msgs), uncovered)
	}
}

func TestDetectLanguage(t *testing.T) {
	cases := []struct {
		name string
		text []string
		want Language
	}{
		{"empty", nil, LangEnglish},
		{"english", []string{"The importer fails with database is locked."}, LangEnglish},
		{"chinese", []string{"今天我们把博客部署到了新的服务器上，一切顺利。"}, LangChinese},
		{"chinese with a term", []string{"我们决定用 Caddy 做反向代理，因为它可以自动申请证书，配置也很简单。"}, LangChinese},
		{"mixed", []string{"部署 Docker 时 permission denied，因为 volume 的 UID 不匹配"}, LangMixed},
		{"mixed across messages", []string{"Run go test ./... again please", "好的，测试全部通过了"}, LangMixed},
		{"english with a stray thank-you", []string{strings.Repeat("The migration ran cleanly on staging. ", 8) + "谢谢"}, LangEnglish},
		{"digits and code only", []string{"1234 == 1234; // ok"}, LangEnglish},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var msgs []Message
			for i, s := range c.text {
				msgs = append(msgs, Message{N: i + 1, Role: RoleUser, Text: s})
			}
			if got := DetectLanguage(msgs); got != c.want {
				t.Errorf("DetectLanguage = %s, want %s", got, c.want)
			}
		})
	}
}

func TestMapPrompt(t *testing.T) {
	msgs := sized(30, 60)
	chunks, _ := SplitChunks(msgs, ChunkOptions{MaxChars: 600, OverlapMsgs: 2})
	cases := []struct {
		lang     Language
		chunk    int
		contains []string
	}{
		{LangEnglish, 0, []string{"Session language: English", "Transcript part 1 of", "<transcript>\n[U1] "}},
		{LangMixed, 1, []string{"Keywords (zh)", "first 2 messages end the previous part"}},
		{LangChinese, 1, []string{"Write each lesson's text in Chinese"}},
	}
	for _, c := range cases {
		req := mapPrompt(chunks[c.chunk], len(chunks), c.lang)
		for _, s := range c.contains {
			if !strings.Contains(req.Prompt, s) {
				t.Errorf("%s prompt lacks %q:\n%s", c.lang, s, req.Prompt)
			}
		}
		if req.System != mapSystem || req.Schema == nil {
			t.Errorf("system or schema missing")
		}
		if got := transcriptOf(req.Prompt); len(got) != len(chunks[c.chunk].Messages) {
			t.Errorf("prompt carries %d messages, chunk has %d", len(got), len(chunks[c.chunk].Messages))
		}
	}
	for _, s := range []string{"Pitfall: <what went wrong>. Cause: <why>. Fix: <what solved it>. Prevention:", "At most 8 lessons", "480 characters", "secrets", "message_ids", "keywords_zh"} {
		if !strings.Contains(mapSystem, s) {
			t.Errorf("map instruction lacks %q", s)
		}
	}
}

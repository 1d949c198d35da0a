package distill

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunking defaults, from the seed.
const (
	DefaultMapChunkChars  = 12000
	DefaultMapOverlapMsgs = 10
	DefaultMaxChunks      = 200
)

// cutMark ends a message cut to fit a chunk.
const cutMark = " …[cut]"

// minChunkChars keeps a chunk big enough for a label, some text and cutMark.
const minChunkChars = 100

// Render writes a message as prompts show it: "[U12] text" or "[A13] text".
func Render(m Message) string {
	return Label(m) + " " + m.Text
}

// Label is a message's citation: "U12" for user message 12, "A13" for
// assistant message 13.
func Label(m Message) string {
	letter := "A"
	if m.Role == RoleUser {
		letter = "U"
	}
	return "[" + letter + strconv.Itoa(m.N) + "]"
}

// ChunkOptions bounds chunks; zero values mean the defaults, a negative
// OverlapMsgs means no overlap. MaxChars is at least 100.
type ChunkOptions struct {
	MaxChars    int // longest chunk text, in characters (runes)
	OverlapMsgs int // messages repeated from the end of the previous chunk
	MaxChunks   int // chunks made at most; later messages are left out
}

func (o ChunkOptions) withDefaults() ChunkOptions {
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMapChunkChars
	}
	o.MaxChars = max(o.MaxChars, minChunkChars)
	switch {
	case o.OverlapMsgs == 0:
		o.OverlapMsgs = DefaultMapOverlapMsgs
	case o.OverlapMsgs < 0:
		o.OverlapMsgs = 0
	}
	if o.MaxChunks <= 0 {
		o.MaxChunks = DefaultMaxChunks
	}
	return o
}

// Chunk is one map call's share of a session.
type Chunk struct {
	Index    int       // 0-based position in the session
	Messages []Message // the overlap from the previous chunk, then new ones
	Overlap  int       // how many of Messages repeat the previous chunk
	Text     string    // Messages rendered one per line, each cut to fit
}

// First is the number of the chunk's first message.
func (c Chunk) First() int { return c.Messages[0].N }

// Last is the number of the chunk's last message.
func (c Chunk) Last() int { return c.Messages[len(c.Messages)-1].N }

// SplitChunks cuts a session into chunks of at most MaxChars characters.
// Each chunk after the first starts with the last OverlapMsgs messages of the
// one before, so a lesson spanning the boundary is seen whole; the overlap
// gives way (oldest first) to keep at most half a chunk, so every chunk
// covers new ground. A message longer than a chunk is cut, not dropped.
// The second result is how many messages were left out by MaxChunks.
func SplitChunks(msgs []Message, o ChunkOptions) ([]Chunk, int) {
	o = o.withDefaults()
	lines := renderAll(msgs, o.MaxChars)
	var chunks []Chunk
	next := 0
	for next < len(msgs) && len(chunks) < o.MaxChunks {
		start := next
		if len(chunks) > 0 {
			start = overlapStart(lines, next, o)
		}
		// size counts each line with the newline that follows it.
		end, size := next, charsOf(lines[start:next])
		for end < len(msgs) && (end == next || size+lines[end].chars <= o.MaxChars) {
			size += lines[end].chars + 1
			end++
		}
		chunks = append(chunks, makeChunk(len(chunks), msgs[start:end], lines[start:end], next-start))
		next = end
	}
	return chunks, len(msgs) - next
}

type renderedLine struct {
	text  string
	chars int
}

// renderAll renders each message, cut to fit a chunk on its own.
func renderAll(msgs []Message, maxChars int) []renderedLine {
	out := make([]renderedLine, len(msgs))
	for i, m := range msgs {
		text := Render(m)
		n := utf8.RuneCountInString(text)
		if n > maxChars {
			text = cutRunes(text, maxChars-utf8.RuneCountInString(cutMark)) + cutMark
			n = utf8.RuneCountInString(text)
		}
		out[i] = renderedLine{text, n}
	}
	return out
}

// overlapStart picks where the chunk starting new messages at next begins:
// up to OverlapMsgs earlier messages, no more than half a chunk of them, and
// leaving room for the first new message.
func overlapStart(lines []renderedLine, next int, o ChunkOptions) int {
	room := min(o.MaxChars/2, o.MaxChars-lines[next].chars)
	start, size := next, 0
	for start > 0 && next-start < o.OverlapMsgs {
		c := lines[start-1].chars + 1
		if size+c > room {
			break
		}
		size += c
		start--
	}
	return start
}

func charsOf(lines []renderedLine) int {
	n := 0
	for _, l := range lines {
		n += l.chars + 1
	}
	return n
}

func makeChunk(index int, msgs []Message, lines []renderedLine, overlap int) Chunk {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.text)
	}
	return Chunk{Index: index, Messages: msgs, Overlap: overlap, Text: b.String()}
}

// cutRunes returns s's first n runes.
func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// Language is a session's main written language, which decides whether
// lessons carry Chinese keywords.
type Language string

// Languages DetectLanguage tells apart.
const (
	LangEnglish Language = "en"
	LangChinese Language = "zh"
	LangMixed   Language = "mixed"
)

// Language thresholds on the Han share of the text, where one Han character
// weighs as much as two Latin letters (an English word is about five letters,
// a Chinese one about two characters).
const (
	hanWeight     = 2
	zhShareMin    = 0.7
	mixedShareMin = 0.05
)

// DetectLanguage reports zh when Chinese dominates the session's text, en
// when there is next to none, and mixed in between. Code, paths and product
// names make most Chinese technical sessions mixed, which is the point: their
// lessons need keywords in both languages.
func DetectLanguage(msgs []Message) Language {
	var han, latin int
	for _, m := range msgs {
		for _, r := range m.Text {
			switch {
			case unicode.Is(unicode.Han, r):
				han++
			case r < utf8.RuneSelf && unicode.IsLetter(r):
				latin++
			}
		}
	}
	if han == 0 {
		return LangEnglish
	}
	share := float64(han*hanWeight) / float64(han*hanWeight+latin)
	switch {
	case share >= zhShareMin:
		return LangChinese
	case share >= mixedShareMin:
		return LangMixed
	}
	return LangEnglish
}

package rules

import "testing"

// telegramMessage is what OpenClaw hands a plugin for a Telegram DM.
const telegramMessage = "Conversation info (untrusted metadata):\n" +
	"```json\n" +
	`{"message_id":"1234","sender":"alice","channel":"telegram"}` + "\n" +
	"```\n" +
	"\n" +
	"[Telegram Alice +5m] Remember that my wife's birthday is March 3rd"

func TestStripEnvelope(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"telegram DM", telegramMessage, "Remember that my wife's birthday is March 3rd"},
		{"conversation and sender blocks, message id trailer",
			"Conversation info (untrusted metadata):\n```json\n{\"chat_id\":\"-100\",\"was_mentioned\":true}\n```\n\n" +
				"Sender (untrusted metadata):\n```json\n{\"name\":\"Alice\",\"id\":\"42\"}\n```\n\n" +
				"[Telegram Alice +5m] I prefer tea over coffee\n[message_id: 42]",
			"I prefer tea over coffee"},
		{"other untrusted label", "Replied message (untrusted, for context):\n```json\n{\"body\":\"old\"}\n```\nI agree, let's use Go",
			"I agree, let's use Go"},
		{"label without a fenced block keeps the following text",
			"Sender (untrusted metadata):\nWe decided to ship on Friday", "We decided to ship on Friday"},
		{"CRLF line endings",
			"Conversation info (untrusted metadata):\r\n```json\r\n{\"a\":1}\r\n```\r\n\r\nI prefer tabs", "I prefer tabs"},
		{"discord header with date", "[Discord Bob 2026-01-02 10:00] We decided to use Go", "We decided to use Go"},
		{"whatsapp header with number", "[WhatsApp +15551234567 +2m] I prefer window seats", "I prefer window seats"},
		{"lower-case channel name", "[telegram alice] hello", "hello"},
		{"timestamp header", "[Mon 2026-04-14 12:34 EDT] what did we decide?", "what did we decide?"},
		{"cron prefix", "[cron:job-42 nightly] Summarise the day", "Summarise the day"},
		{"cron prefix behind a channel header", "[Telegram Alice] [cron:x] Summarise the day", "Summarise the day"},
		{"message id mid-text", "I prefer tea [message_id: 9876]", "I prefer tea"},
		{"recall block then question",
			"<relevant-memories>\n[UNTRUSTED DATA — x]\n- [fact:global] tea\n[END UNTRUSTED DATA]\n</relevant-memories>\n\nWhat did I say about tea?",
			"What did I say about tea?"},
		{"recall block in upper case", "<RELEVANT-MEMORIES>x</RELEVANT-MEMORIES> hi", "hi"},
		{"envelope only", "Conversation info (untrusted metadata):\n```json\n{\"message_id\":\"1\"}\n```\n\n[Telegram Alice +5m]", ""},
		{"plain text is only trimmed", "  I like [brackets] and <b>tags</b>  ", "I like [brackets] and <b>tags</b>"},
		{"channel name not at line start", "Read the [Telegram] docs first", "Read the [Telegram] docs first"},
		{"blank lines left by removal collapse",
			"First line\n[message_id: 1]\n\n\n\nSecond line", "First line\n\nSecond line"},
		{"chinese message", "[Telegram 小明 +1m] 记住我喜欢乌龙茶", "记住我喜欢乌龙茶"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := StripEnvelope(tt.in); got != tt.want {
			t.Errorf("%s: StripEnvelope(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

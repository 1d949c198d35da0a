package rules

import (
	"regexp"
	"strings"
)

// OpenClaw wraps an inbound user message in transport metadata. Captured as
// is, it turns into junk memories and junk recall queries (the users' most
// common complaint), so every rule works on the stripped text.
var (
	// A label line such as "Conversation info (untrusted metadata):" or
	// "Replied message (untrusted, for context):" and, usually, a fenced block.
	metadataBlock = regexp.MustCompile("(?m)^[ \\t]*[^\\n()]{1,80}\\(untrusted[^)\\n]{0,40}\\):[ \\t]*" +
		"(?:\\r?\\n[ \\t]*```[^\\n]*\\n(?s:.*?)```[ \\t]*)?(?:\\r?\\n|$)")

	// "[Telegram Alice +5m]", "[Discord Bob 2026-01-02 10:00]", "[WhatsApp +1555…]".
	channelHeader = regexp.MustCompile(`(?im)^[ \t]*\[(?:telegram|whatsapp|discord|slack|signal|imessage|bluebubbles|` +
		`google ?chat|(?:ms ?|microsoft )?teams|matrix|mattermost|nextcloud(?: talk)?|line|feishu|lark|zalo|` +
		`nostr|twitch|irc|webchat|sms|email|tlon|synology(?: chat)?|qq|wechat|dingtalk|voice)\b[^\]\n]*\][ \t]*`)

	// A leading timestamp such as "[Mon 2026-04-14 12:34 EDT]".
	timestampHeader = regexp.MustCompile(`(?im)^[ \t]*\[(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]* )?` +
		`\d{4}-\d{2}-\d{2}[^\]\n]*\][ \t]*`)

	cronPrefix       = regexp.MustCompile(`(?m)^[ \t]*\[cron:[^\]\n]*\][ \t]*`)
	messageIDTrailer = regexp.MustCompile(`[ \t]*\[message_id:[^\]\n]*\]`)
	recallBlock      = regexp.MustCompile(`(?is)<relevant-memories>.*?</relevant-memories>[ \t]*(?:\r?\n)?`)
	blankLines       = regexp.MustCompile(`\n[ \t]*(?:\r?\n[ \t]*)+\n`)
)

// maxStripPasses bounds the re-runs needed when removing one piece exposes
// another at the start of a line (a "[cron:…]" prefix behind a channel header).
const maxStripPasses = 4

// StripEnvelope removes OpenClaw's inbound envelope — untrusted-metadata
// blocks, channel and timestamp headers, "[cron:…]" prefixes, "[message_id:…]"
// trailers and any <relevant-memories> block — and returns the user's own
// words, trimmed. Text without any of them comes back only trimmed.
func StripEnvelope(text string) string {
	s := strings.TrimSpace(text)
	for range maxStripPasses {
		next := stripOnce(s)
		if next == s {
			break
		}
		s = next
	}
	return s
}

func stripOnce(s string) string {
	orig := s
	if strings.IndexByte(s, '<') >= 0 {
		s = recallBlock.ReplaceAllString(s, "")
	}
	if strings.Contains(s, "(untrusted") {
		s = metadataBlock.ReplaceAllString(s, "")
	}
	if strings.IndexByte(s, '[') >= 0 {
		s = cronPrefix.ReplaceAllString(s, "")
		s = channelHeader.ReplaceAllString(s, "")
		s = timestampHeader.ReplaceAllString(s, "")
		s = messageIDTrailer.ReplaceAllString(s, "")
	}
	if s == orig {
		return s
	}
	return strings.TrimSpace(blankLines.ReplaceAllString(s, "\n\n"))
}

package rules

import "testing"

func TestShouldSkipRetrieval(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		// Greetings, acknowledgements, continuations, emoji.
		{"hi", true},
		{"hello", true},
		{"Good morning!", true},
		{"yes", true},
		{"ok 👍", true},
		{"Thanks!", true},
		{"👍👍", true},
		{"🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉", true},
		{"go ahead", true},
		{"Continue", true},
		{"Proceed.", true},
		{"", true},
		// Commands.
		{"/new", true},
		{"/model gpt-5", true},
		{"git status", true},
		{"npm install", true},
		{"run the tests", true},
		{"ls -la", true},
		{"go build ./...", true},
		{"/etc/hosts is broken on the staging box again", false},
		{"Test whether the login flow works when the session cookie expires overnight", false},
		{"git status shows a conflict, what should I do?", false},
		// System lines.
		{"HEARTBEAT", true},
		{"Read HEARTBEAT.md if it exists. Do not infer old tasks from prior chats.", true},
		{"[System Message] compaction finished", true},
		// Short statements and short questions.
		{"fix it", true},
		{"looks fine now", true},
		{"what time?", false},
		{"帮我看看", true},
		{"帮我看看这个错误是怎么回事", false},
		{"这是什么吗", false},
		// Forced: memory words, time references, personal details.
		{"你记得我上次说的吗", false},
		{"上次", false},
		{"Do you remember my name?", false},
		{"remember?", false},
		{"What is my email?", false},
		{"What did we decide yesterday", false},
		{"like before", false},
		{"ok, as previously", false},
		// Ordinary requests.
		{"Can you summarise the design doc for the billing service", false},
		// Envelope and cron prefixes are stripped first.
		{"Conversation info (untrusted metadata):\n```json\n{\"message_id\":\"7\"}\n```\n\n[Telegram Alice +5m] hi", true},
		{telegramMessage, false},
		{"[cron:daily-summary] Summarise what happened in the repo today", false},
		{"[cron:abc] HEARTBEAT", true},
		// Other languages.
		{"ano", true},
		{"Danke!", true},
		{"はい", true},
		{"네", true},
		{"好的", true},
		{"继续", true},
		{"Pamatuješ si, co jsem říkal?", false},
		{"Weißt du noch, was wir gestern beschlossen haben?", false},
		{"前回の話を続けましょう", false},
		{"지난번에 말한 거 기억해?", false},
	}
	for _, tt := range tests {
		if got := ShouldSkipRetrieval(tt.in); got != tt.want {
			t.Errorf("ShouldSkipRetrieval(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

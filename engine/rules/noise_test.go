package rules

import "testing"

func TestIsNoise(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		// Session boilerplate and greetings, only as the whole message.
		{"hi", true},
		{"Hello!", true},
		{"hey there 👋", true},
		{"  Good morning  ", true},
		{"HEARTBEAT", true},
		{"HEARTBEAT_OK", true},
		{"Read HEARTBEAT.md if it exists and follow it", true},
		{"✅ New session started · model: gpt-5", true},
		{"Fresh session, let's begin", true},
		{"Guten Morgen", true},
		{"Dobrý den", true},
		{"こんにちは", true},
		{"안녕하세요", true},
		{"你好！", true},
		{"abc", true},
		{"ok", true},
		{"", true},
		{"history of the project starts in 2019", false},
		{"hijack the build cache to speed up CI", false},
		{"Hello-world program crashed on startup", false},
		{"Hi, my name is Alice and I prefer tea", false},
		{"Hey team, the deploy is done", false},
		{"Heyday of the mainframe era", false},
		{"The user prefers dark mode", false},
		{"Mein Lieblingsessen ist Pizza", false},
		// Agent denials.
		{"I don't have any information about that", true},
		{"Sorry, I don't have any information about your wife", true},
		{"I'm not sure about the deadline", true},
		{"I don't recall you mentioning it", true},
		{"Unfortunately, I couldn't find any relevant memories", true},
		{"Ich weiß nicht, wann das war", true},
		{"我不记得你说过这个", true},
		{"申し訳ありませんが、覚えていません", true},
		{"The user said I don't recall is a bad answer", false},
		// Questions about the memory itself.
		{"Do you remember my birthday?", true},
		{"Can you recall what we decided?", true},
		{"What do you know about me?", true},
		{"Erinnerst du dich an gestern?", true},
		{"Pamatuješ si moje jméno?", true},
		{"你记得我上次说的吗", true},
		{"私の名前を覚えてる？", true},
		{"내 이름 기억나?", true},
	}
	for _, tt := range tests {
		if got := IsNoise(tt.in); got != tt.want {
			t.Errorf("IsNoise(%q) = %v, want %v", tt.in, got, tt.want)
		}
		// Remembered: read, then from the table.
		for range 2 {
			if got := NoiseOf(tt.in); got != tt.want {
				t.Errorf("NoiseOf(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

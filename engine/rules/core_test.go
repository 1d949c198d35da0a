package rules

import (
	"strings"
	"testing"
)

func TestIsCore(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		// The speaker's name.
		{"My name is Anna", true},
		{"Call me Sam.", true},
		{"Please always call me Dr Novak", true},
		{"Jmenuji se Anna", true},
		{"Moje jméno je Anna", true},
		{"Ich heiße Anna", true},
		{"Mein Name ist Anna", true},
		{"我叫安娜", true},
		{"我的名字是安娜", true},
		{"私の名前はアンナです", true},
		{"サムと呼んでください", true},
		{"제 이름은 안나예요", true},
		// Languages.
		{"My native language is German", true},
		{"I speak German and Czech", true},
		{"Mluvím česky a anglicky", true},
		{"Ich spreche Deutsch und Englisch", true},
		{"我会说中文和英语", true},
		{"日本語と英語を話します", true},
		{"한국어랑 영어를 할 줄 알아요", true},
		// Standing instructions to the assistant.
		{"Answer in British English", true},
		{"Always reply in German", true},
		{"Never use emojis", true},
		{"Odpovídej česky", true},
		{"Bitte antworte immer auf Deutsch", true},
		{"Verwende keine Emojis", true},
		{"请用中文回答", true},
		{"不要用表情符号", true},
		{"日本語で答えてください", true},
		{"한국어로 대답해 주세요", true},
		// Not core: other facts, questions, people other than the speaker,
		// look-alikes, long texts.
		{"I prefer dark mode in every editor", false},
		{"My sister's name is Eva", false},
		{"What is my name?", false},
		{"Call me tomorrow at five", false},
		{"My boss will call me Monday", false},
		{"I speak to my manager on Mondays", false},
		{"I always use vim keybindings", false},
		{"Der Name des Hundes ist Rex", false},
		{"我的猫叫咪咪", false},
		{"enemy name is", false},
		{"My name is Anna. " + strings.Repeat("I spent the summer in Brno with my family and friends. ", 4), false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsCore(tt.in); got != tt.want {
			t.Errorf("IsCore(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzIsCore(f *testing.F) {
	for _, s := range []string{"My name is Anna", "call me ", "Call me \xff", "İcall me Sam", "请用中文回答", "?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := strings.TrimSpace(Normalize(s))
		if IsCore(s) && (len(n) > maxCoreBytes || strings.ContainsRune(n, '?')) {
			t.Fatalf("IsCore(%q) for a question or a long text", s)
		}
	})
}

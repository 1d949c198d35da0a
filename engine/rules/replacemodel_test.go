package rules

import "testing"

// TestStatementReplaces: what the rules read stays read; changes no rule
// lists are read by the model; a question, a remark, a text of several
// facts and a change of something else replace nothing; a speaker's label
// names nothing.
func TestStatementReplaces(t *testing.T) {
	for _, tc := range []struct {
		name             string
		newText, oldText string
		want             bool
	}{
		{"a rule's change", "Sold the Corvano and got a Hallis EV instead", "I drive a Corvano sedan", true},
		{"a rule's change, CJK", "高梨さんが異動になって、新しい上司は森本さんになりました", "上司は高梨さんです", true},
		{"speaker labels dropped", "Jana: Harriet left the publisher, my editor is Petr Novák now", "Jana: My editor is Harriet Moss", true},
		{"a question", "Did I ever sell the Corvano?", "I drive a Corvano sedan", false},
		{"asked about", "Sold the Corvano and got a Hallis EV instead", "Do I still drive the Corvano?", false},
		{"a remark", "Oh no", "I drive a Corvano sedan", false},
		{"several facts in the older text", "Sold the Corvano and got a Hallis EV instead",
			"I drive a Corvano sedan. My sister lives in Vienna. We both cycle on Sundays.", false},
		{"another fact changed", "Switched to a Pixel last week, the old phone died", "I live in Graz", false},
		{"someone else's", "Angeln hab ich aufgegeben, dafür töpfere ich jetzt", "Mein Bruder geht jeden Sonntag angeln", false},
		{"itself", "I drive a Corvano sedan", "I drive a Corvano sedan", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadStatement(tc.newText).Replaces(ReadStatement(tc.oldText)); got != tc.want {
				t.Errorf("%q replaces %q: %v, want %v", tc.newText, tc.oldText, got, tc.want)
			}
		})
	}
}

func TestWithoutSpeaker(t *testing.T) {
	for in, want := range map[string]string{
		"Jana: I live in Brno":               "I live in Brno",
		"Mary Ann: back from Oslo":           "back from Oslo",
		"Note: the meeting moved":            "the meeting moved",
		"I live in Brno: it's lovely":        "I live in Brno: it's lovely",
		"time: 10:30":                        "time: 10:30",
		"http://example.com: down":           "http://example.com: down",
		"Jana:":                              "Jana:",
		"Jana:no space":                      "Jana:no space",
		"A very long label of many words: x": "A very long label of many words: x",
		"田中: 東京に住んでいます":                      "田中: 東京に住んでいます",
	} {
		if got := withoutSpeaker(in); got != want {
			t.Errorf("withoutSpeaker(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzReadStatement: no text replaces itself, the gists turn away no pair
// that replaces, and a pair's remembered verdict is ReplacesBy's.
func FuzzReadStatement(f *testing.F) {
	f.Add("Jana: Sold the Corvano and got a Hallis EV", "I drive a Corvano")
	f.Add("豆豆去年走了", "我养了一只金毛叫豆豆")
	f.Add("\xff: \xfe", "A: ")
	f.Add("Oh no", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb := ReadStatement(a), ReadStatement(b)
		by := na.ReplacesBy(nb)
		if by != "" && !gistOfText(a).MayReplace(gistOfText(b)) {
			t.Fatalf("the gists turn away %q replacing %q (%s)", a, b, by)
		}
		for range 2 {
			if got := ReplacesByOf(a, b, func() string { return ReadStatement(a).ReplacesBy(ReadStatement(b)) }); got != by {
				t.Fatalf("ReplacesByOf(%q, %q) = %q, want %q", a, b, got, by)
			}
		}
		if na.Replaces(ReadStatement(a)) {
			t.Fatalf("a text replaces itself: %q", a)
		}
	})
}

package rules

import "testing"

func TestAsksAboutSpeaker(t *testing.T) {
	for _, c := range []struct {
		q    string
		want bool
	}{
		{"Where do I live now?", true},
		{"what's my phone number", true},
		{"Wo wohne ich jetzt?", true},
		{"Jaký je můj e-mail?", true},
		{"我现在住在哪里？", true},
		{"今どこに住んでいますか？", true}, // the asker is left unsaid
		{"지금 어디 살아요?", true},
		// Someone else is asked about.
		{"Where does my sister live?", false},
		{"Wo arbeitet meine Frau?", false},
		{"我妻子在哪里工作？", false},
		{"남편 회사가 어디예요?", false},
		{"What did Caroline study?", false},
		{"Where do I meet Tomas tomorrow?", false},
		// Nobody: an impersonal question.
		{"What did the festival director dislike about the poster?", false},
		// A Czech question that says the asker only in its verb.
		{"Kde teď bydlím?", false},
	} {
		if got := AsksAboutSpeaker(c.q); got != c.want {
			t.Errorf("AsksAboutSpeaker(%q) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestRelation(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"My brother Callum lives in Ashby", "brother"},
		{"Tomas: my sister moved to Leeds", "sister"}, // the label is not read
		{"I live in Kelvale", ""},
		{"妻はソニーで働いています", "妻"},
	} {
		if got := Relation(c.text); got != c.want {
			t.Errorf("Relation(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

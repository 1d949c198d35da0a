package rules

import "testing"

// TestReplaces: a change told in free words ends the older fact it names,
// or the speaker's home, job or number it moves away from; facts of other
// people, of work, and additions are left alone.
func TestReplaces(t *testing.T) {
	for _, tc := range []struct {
		newText, oldText string
		want             bool
	}{
		{"Sold the Corvano and got a Hallis EV instead", "I drive a Corvano sedan", true},
		{"Cancelled Ironleaf — switched to Pulse Yard, it's way closer to home", "I'm a member at Ironleaf Gym", true},
		{"Greg left the company, so these days I report to Priya Vasant", "My manager is Greg Tollan", true},
		{"Z Modrého Mlýna jsem odešla, od září jsem v Teraxu", "Pracuju ve firmě Modrý Mlýn", true},
		{"Angeln hab ich aufgegeben, dafür töpfere ich jetzt", "Ich gehe gern angeln", true},
		{"Mein Falkon ist mir runtergefallen, jetzt hab ich ein Nuvio Pro", "Ich habe ein Falkon 8 als Handy", true},
		{"高梨さんが異動になって、新しい上司は森本さんになりました", "上司は高梨さんです", true},
		{"豆豆去年走了，今年我们又养了一只柴犬", "我养了一只金毛叫豆豆", true},
		{"강철짐은 끊었고 이제 필라테스 다녀요", "저는 강철짐에 다녀요", true},
		{"요즘은 아메리카노보다 라떼가 더 좋아요", "저는 아메리카노를 제일 좋아해요", true},
		{"Seit dem Umzug im Sommer sind wir in Lindenhagen zu Hause", "Ich wohne in Birkenfelde", true},
		{"V Horní Vrbici už nebydlíme, od jara jsme doma v Zálesí", "Bydlím v Horní Vrbici", true},

		// Someone else's fact, or work's.
		{"Angeln hab ich aufgegeben, dafür töpfere ich jetzt", "Mein Bruder geht jeden Sonntag angeln", false},
		{"凌风卖了，换了辆驰越电动车", "我爸开的是凌风轿车", false},
		{"번호 바꿨어요! 새 번호는 010-7315-2264예요", "회사 번호는 02-555-0193이에요", false},
		{"Please use sam.rowe@quillmail.net from now on, I shut down the old Postlark account", "My assistant's email is leah@postlark.com", false},
		// No change told.
		{"I also got a dog called Biscuit", "I have a cat called Mochi", false},
		{"Ich lerne jetzt Spanisch", "Spanisch finde ich schwer", false},
		{"My wife works at Kornwerk", "I work at Kornwerk", false},
		// Nothing of the old fact named.
		{"Sold the Corvano and got a Hallis EV instead", "I run every morning before work", false},
		{"same", "same", false},
	} {
		if got := Replaces(tc.newText, tc.oldText); got != tc.want {
			t.Errorf("Replaces(%q, %q) = %v, want %v", tc.newText, tc.oldText, got, tc.want)
		}
	}
}

func FuzzReplaces(f *testing.F) {
	f.Add("Sold the Corvano and got a Hallis EV", "I drive a Corvano")
	f.Add("豆豆去年走了", "我养了一只金毛叫豆豆")
	f.Add("\xff", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		Replaces(a, b)
		if Replaces(a, a) {
			t.Fatalf("a text replaces itself: %q", a)
		}
	})
}

package temporal

import (
	"strings"
	"testing"
)

var asksCases = map[string]struct{ yes, no []string }{
	"en": {
		yes: []string{"When did Mara adopt her dog?", "What's the date of Dev's birthday?", "How long has Jana lived in Prague?",
			"What day did we meet?", "Which year did she graduate?", "How many days did the trip take?",
			"What time does the film start?", "Since when have you worked there?", "WHEN is the party?"},
		no: []string{"What is Mara's dog called?", "Whenever I call, nobody answers. Who is she?", "Where does Jana live?",
			"Who is Dev?", "How many cats does she have?", "What did you eat?"},
	},
	"cs": {
		yes: []string{"Kdy jsi přijel?", "Jak dlouho tam bydlíš?", "Kolik dní to trvalo?", "Kolikátého je dnes?",
			"V kolik hodin začíná film?", "V jakém roce ses narodil?", "Odkdy tam pracuješ?", "Do kdy tam budeš?",
			"Kolik týdnů tam byla?"},
		no: []string{"Kdo je Jana?", "Byl jsi někdy v Praze?", "Co máš rád?", "Kde bydlíš?", "Jak se jmenuje tvůj pes?",
			"Kolik máš koček?"},
	},
	"de": {
		yes: []string{"Wann bist du angekommen?", "Wie lange wohnst du schon hier?", "Seit wann arbeitest du dort?",
			"An welchem Tag war das?", "Wie viele Tage hat es gedauert?", "Um wie viel Uhr beginnt der Film?",
			"In welchem Jahr bist du geboren?", "Bis wann bleibst du?"},
		no: []string{"Wie heißt Maras Hund?", "Irgendwann fahren wir hin, oder?", "Wo wohnst du?", "Was ist dein Lieblingsessen?",
			"Wer ist Jana?"},
	},
	"zh": {
		yes: []string{"你什么时候到的?", "你在这里住了多久?", "你的生日是几号?", "哪天去的?", "你星期几有空?", "几点开始?",
			"哪一年出生的?"},
		no: []string{"玛拉的狗叫什么名字?", "你住在哪里?", "你喜欢吃什么?", "谁是简?"},
	},
	"ja": {
		yes: []string{"いつ来ましたか?", "誕生日はいつですか?", "誕生日はいつでしたか?", "いつから住んでいますか?",
			"何曜日に会いますか?", "どのくらい住んでいますか?", "何時に始まりますか?", "何年に生まれましたか?", "いつ?"},
		no: []string{"マラの犬の名前は何ですか?", "どこに住んでいますか?", "いつも何を飲みますか?", "いつか行きたいですか?",
			"いつでも来てくれますか?", "好きな食べ物は何ですか?"},
	},
	"ko": {
		yes: []string{"언제 왔어요?", "생일이 며칠이에요?", "무슨 요일에 만나요?", "몇 시에 시작해요?", "얼마나 오래 살았어요?",
			"몇 년에 태어났어요?", "언제 나가요?", "언제?"},
		no: []string{"마라의 개 이름이 뭐예요?", "어디에 살아요?", "뭐 좋아해요?", "지나는 누구예요?", "언제나 행복해요?",
			"언제든지 와도 돼요?"},
	},
}

func TestAsks(t *testing.T) {
	for lang, c := range asksCases {
		t.Run(lang, func(t *testing.T) {
			if len(c.yes) < 6 || len(c.no) < 4 {
				t.Errorf("%d positive and %d negative cases, want at least 6 and 4", len(c.yes), len(c.no))
			}
			for _, q := range c.yes {
				if !Asks(q) {
					t.Errorf("Asks(%q) = false, want true", q)
				}
			}
			for _, q := range c.no {
				if Asks(q) {
					t.Errorf("Asks(%q) = true, want false", q)
				}
			}
		})
	}
}

func TestAsksEdges(t *testing.T) {
	for q, want := range map[string]bool{
		"":                                      false,
		"\xff\xfewhen\xff":                      true,
		"when":                                  true,
		"whenever":                              false,
		"somewhen?":                             false,
		"kdysi":                                 false, // once upon a time
		"kdykoli":                               false, // whenever
		"date of birth?":                        true,
		"up-to-date info":                       false,
		strings.Repeat("x ", MaxText) + "when?": false, // past MaxText
	} {
		if got := Asks(q); got != want {
			t.Errorf("Asks(%.40q) = %v, want %v", q, got, want)
		}
	}
}

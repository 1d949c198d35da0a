package rules

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// supersedeCases pair a new memory with an old one. Must-not cases name
// their reason: same value, different entity, different context, different
// person, unrelated fact, past, question, negation, addition, different
// domain, description, extra detail.
var supersedeCases = []struct {
	lang, newText, oldText string
	want                   bool
}{
	// English.
	{"en", "I moved to Berlin", "I live in Paris", true},
	{"en", "I live in Berlin now", "I live in Paris", true},
	{"en", "I work at the harbour authority now", "I work at Siemens", true},
	{"en", "I started a new job at Bosch", "I work at Siemens", true},
	{"en", "my daughter is seven", "My daughter is six", true},
	{"en", "My favourite colour is green now", "My favourite colour is blue", true},
	{"en", "My favorite color is green", "My favourite colour is blue", true},
	{"en", "I prefer coffee now", "I prefer tea", true},
	{"en", "In the morning I prefer coffee", "I prefer tea in the morning", true},
	{"en", "My phone number is +1 555 010 2222", "My phone number is +1 555 010 9999", true},
	{"en", "my email is b@y", "My email is a@x", true},
	{"en", "My new manager is Jonas", "My manager is Petra", true},
	{"en", "I drive a Tesla now", "I drive a Skoda", true},
	{"en", "My sister moved to Vienna", "My sister lives in Prague", true},
	{"en", "I'm 35 now", "I am 34", true},
	{"en", "Btw, I'm now working for Google", "I work at Siemens", true},
	{"en", "I live in Paris", "I live in Paris", false},                                 // same value
	{"en", "I moved to Paris", "I live in Paris", false},                                // same value
	{"en", "I live in Paris, France", "I live in Paris", false},                         // extra detail
	{"en", "I work at Siemens in Munich", "I work at Siemens", false},                   // extra detail
	{"en", "My dog Luna is a poodle", "My dog Rex is a beagle", false},                  // different entity
	{"en", "My dog Luna is four", "My dog Rex is three", false},                         // different entity
	{"en", "I prefer coffee after lunch", "I prefer tea in the morning", false},         // different context
	{"en", "I prefer light mode on my phone", "I prefer dark mode in my editor", false}, // different context
	{"en", "My brother lives in Vienna", "My sister lives in Prague", false},            // different person
	{"en", "My sister lives in Berlin", "I live in Paris", false},                       // different person
	{"en", "I work in Paris", "I live in Paris", false},                                 // unrelated fact
	{"en", "I work at Bosch", "I live in Berlin", false},                                // unrelated fact
	{"en", "I used to live in Paris", "I live in Berlin", false},                        // past
	{"en", "I live in Berlin", "I used to live in Paris", false},                        // past kept as history
	{"en", "Do I live in Berlin?", "I live in Paris", false},                            // question
	{"en", "I don't live in Paris anymore", "I live in Paris", false},                   // negation
	{"en", "I no longer work at Siemens", "I work at Siemens", false},                   // negation
	{"en", "I also work at Bosch", "I work at Siemens", false},                          // addition
	{"en", "I prefer dark mode", "I prefer tea", false},                                 // different domain
	{"en", "My manager is very strict", "My manager is Petra", false},                   // description
	{"en", "I might move to Berlin", "I live in Paris", false},                          // plan
	{"en", "I'm based in Porto now", "I live in Lisbon", true},
	{"en", "I'm based in the Berlin office", "I live in Munich", false}, // unrelated fact
	{"en", "My sister is based in Lyon", "I live in Paris", false},      // different person
	{"en", "I joined Accenture", "I work at Deloitte", true},
	{"en", "I started at Google", "I work at Siemens", true},
	{"en", "I now work for Google", "I work at Siemens", true},
	{"en", "I joined a gym", "I work at Siemens", false},         // description
	{"en", "I joined Twitter", "I work at Siemens", false},       // unrelated fact
	{"en", "I started at 9am", "I work at Siemens", false},       // unrelated fact
	{"en", "My wife joined Accenture", "I work at Bosch", false}, // different person
	{"en", "We moved to Berlin", "I live in Paris", true},
	{"en", "We've moved to Berlin", "I live in Paris", true},
	{"en", "We moved to Postgres", "I live in Paris", false},  // unrelated fact
	{"en", "We moved to the cloud", "I live in Paris", false}, // unrelated fact

	// Czech.
	{"cs", "Přestěhoval jsem se do Berlína", "Bydlím v Paříži", true},
	{"cs", "Teď bydlím v Berlíně", "Bydlím v Praze", true},
	{"cs", "Pracuji u Bosche", "Pracuji v Siemensu", true},
	{"cs", "Moje dcera má sedm let", "Moje dcera má šest let", true},
	{"cs", "Mé dceři je už sedm", "Moje dcera má šest let", true},
	{"cs", "Moje oblíbená barva je teď zelená", "Moje oblíbená barva je modrá", true},
	{"cs", "Teď preferuji kávu", "Preferuji čaj", true},
	{"cs", "Můj nový šéf je Jonáš", "Můj šéf je Petr", true},
	{"cs", "Můj e-mail je b@y.cz", "Můj e-mail je a@x.cz", true},
	{"cs", "Přestěhovala jsem se do Prahy", "Bydlím v Praze", false},       // same value, declined
	{"cs", "Bydlím v Praze", "Bydlím v Praze", false},                      // same value
	{"cs", "Můj bratr bydlí ve Vídni", "Moje sestra bydlí v Praze", false}, // different person
	{"cs", "Pracuji v Praze", "Bydlím v Praze", false},                     // unrelated fact
	{"cs", "Dříve jsem bydlel v Paříži", "Bydlím v Berlíně", false},        // past
	{"cs", "Už nebydlím v Praze", "Bydlím v Praze", false},                 // negation
	{"cs", "Preferuji kávu po obědě", "Ráno preferuji čaj", false},         // different context
	{"cs", "Bydlím v Brně?", "Bydlím v Praze", false},                      // question
	{"cs", "Můj pes Rex má čtyři roky", "Můj pes Max má tři roky", false},  // different entity
	{"cs", "Bydlím v Praze a pracuji v Brně", "Bydlím v Ostravě", false},   // two facts
	{"cs", "Teď jezdím Toyotou Yaris", "Jezdím Škodou Fabia", true},
	{"cs", "Mám auto Toyota Yaris", "Jezdím Škodou Fabia", true},
	{"cs", "Jezdím MHD", "Jezdím Škodou Fabia", false},                // unrelated fact
	{"cs", "Jezdím autem do práce", "Jezdím Škodou Fabia", false},     // description
	{"cs", "Mám auto Škoda Fabia", "Jezdím Škodou Fabia", false},      // same value, declined
	{"cs", "Moje sestra jezdí Toyotou", "Jezdím Škodou Fabia", false}, // different person
	{"cs", "Odstěhovali jsme se do Berouna", "Bydlím v Praze", true},
	{"cs", "Přestěhovali se do Berouna", "Bydlím v Praze", false},          // different person
	{"cs", "Odstěhovali jsme se do Prahy", "Bydlím v Praze", false},        // same value, declined
	{"cs", "Dřív jsme se odstěhovali do Berouna", "Bydlím v Praze", false}, // past

	// German.
	{"de", "Ich bin nach Berlin gezogen", "Ich wohne in Paris", true},
	{"de", "Ich wohne jetzt in Berlin", "Ich wohne in München", true},
	{"de", "Inzwischen arbeite ich bei Bosch", "Ich arbeite bei Siemens", true},
	{"de", "Meine Tochter ist sieben", "Meine Tochter ist sechs Jahre alt", true},
	{"de", "Meine Lieblingsfarbe ist jetzt grün", "Meine Lieblingsfarbe ist blau", true},
	{"de", "Ich trinke jetzt lieber Kaffee", "Ich bevorzuge Tee", true},
	{"de", "Mein neuer Chef ist Jonas", "Meine Chefin ist Petra", true},
	{"de", "Meine neue Telefonnummer ist 0171 7654321", "Meine Telefonnummer ist 0171 1234567", true},
	{"de", "Ich fahre jetzt einen Tesla", "Ich fahre einen Skoda", true},
	{"de", "Ich wohne in Berlin", "Ich bin nach Berlin gezogen", false},                       // same value
	{"de", "Mein Bruder wohnt in Wien", "Meine Schwester wohnt in Prag", false},               // different person
	{"de", "Ich bevorzuge Kaffee nach dem Mittagessen", "Ich bevorzuge Tee am Morgen", false}, // different context
	{"de", "Früher wohnte ich in Paris", "Ich wohne in Berlin", false},                        // past
	{"de", "Ich wohne nicht mehr in Berlin", "Ich wohne in Berlin", false},                    // negation
	{"de", "Wohne ich in Berlin?", "Ich wohne in Paris", false},                               // question
	{"de", "Mein Hund Luna ist ein Pudel", "Mein Hund Rex ist ein Beagle", false},             // different entity
	{"de", "Ich arbeite in Paris", "Ich wohne in Paris", false},                               // unrelated fact
	{"de", "Ich arbeite auch bei Bosch", "Ich arbeite bei Siemens", false},                    // addition
	{"de", "Seit März wohne ich in Kiel", "Ich wohne in Hannover", true},
	{"de", "Seit 2024 arbeite ich bei Bosch", "Ich arbeite bei Siemens", true},
	{"de", "Ich wohne seit letztem Jahr in Kiel", "Ich wohne in Hannover", true},
	{"de", "Ab März wohne ich in Kiel", "Ich wohne in Hannover", false},               // plan
	{"de", "Seit März wohnt meine Schwester in Kiel", "Ich wohne in Hannover", false}, // different person
	{"de", "Wir sind nach Kiel gezogen", "Ich wohne in Hannover", true},
	{"de", "Ich bin jetzt bei Aldi", "Ich arbeite bei Lidl", true},
	{"de", "Ich bin jetzt bei meinen Eltern", "Ich arbeite bei Lidl", false}, // unrelated fact
	{"de", "Ich bin bei Freunden", "Ich arbeite bei Lidl", false},            // unrelated fact
	{"de", "Ich bin bei Aldi gewesen", "Ich arbeite bei Lidl", false},        // past
	{"de", "Ich bin nicht mehr bei Aldi", "Ich arbeite bei Lidl", false},     // negation

	// Chinese.
	{"zh", "我搬到了柏林", "我住在巴黎", true},
	{"zh", "我现在住在柏林", "我住在巴黎", true},
	{"zh", "我在博世工作", "我在西门子工作", true},
	{"zh", "我女儿今年七岁了", "我女儿六岁", true},
	{"zh", "我最喜欢的颜色是绿色", "我最喜欢的颜色是蓝色", true},
	{"zh", "我现在更喜欢喝咖啡", "我更喜欢喝茶", true},
	{"zh", "我早上更喜欢喝咖啡", "早上我更喜欢喝茶", true},
	{"zh", "我的新经理是约纳斯", "我的经理是佩特拉", true},
	{"zh", "我的手机号是13900001111", "我的手机号是13800001234", true},
	{"zh", "我住在巴黎", "我搬到了巴黎", false},        // same value
	{"zh", "我住在北京市", "我住在北京", false},        // same value, longer name
	{"zh", "我哥哥住在维也纳", "我姐姐住在布拉格", false},   // different person
	{"zh", "我以前住在巴黎", "我住在柏林", false},       // past
	{"zh", "午饭后我更喜欢喝咖啡", "早上我更喜欢喝茶", false}, // different context
	{"zh", "我住在巴黎吗", "我住在柏林", false},        // question
	{"zh", "我不住在巴黎", "我住在巴黎", false},        // negation
	{"zh", "我在巴黎工作", "我住在巴黎", false},        // unrelated fact
	{"zh", "我的狗是旺财", "我的狗是小黑", false},       // different entity
	{"zh", "我最喜欢的电影是让子弹飞", "我最喜欢的电影是霸王别姬", true},
	{"zh", "我现在开特斯拉", "我开丰田卡罗拉", true},
	{"zh", "我开别克", "我开丰田卡罗拉", true},
	{"zh", "我开会", "我开丰田卡罗拉", false},     // unrelated fact
	{"zh", "我开心", "我开丰田卡罗拉", false},     // unrelated fact
	{"zh", "我不开特斯拉", "我开丰田卡罗拉", false},  // negation
	{"zh", "我老公开特斯拉", "我开丰田卡罗拉", false}, // different person
	{"zh", "我们搬家了，现在住在青岛", "我住在西安", true},
	{"zh", "我们搬到了青岛", "我住在西安", true},
	{"zh", "我们公司搬到了青岛", "我住在西安", false}, // different person
	{"zh", "我住在别的城市", "我住在西安", false},   // description

	// Japanese.
	{"ja", "ベルリンに引っ越しました", "私はパリに住んでいます", true},
	{"ja", "今はベルリンに住んでいます", "パリに住んでいます", true},
	{"ja", "ボッシュで働いています", "シーメンスで働いています", true},
	{"ja", "娘は七歳になりました", "娘は六歳です", true},
	{"ja", "私の好きな色は緑です", "私の好きな色は青です", true},
	{"ja", "今はコーヒーの方が好きです", "紅茶の方が好きです", true},
	{"ja", "私の新しい上司はヨナスです", "私の上司はペトラです", true},
	{"ja", "パリに住んでいます", "パリに引っ越しました", false},        // same value
	{"ja", "兄はウィーンに住んでいます", "姉はプラハに住んでいます", false},  // different person
	{"ja", "以前はパリに住んでいました", "ベルリンに住んでいます", false},   // past
	{"ja", "昼食後はコーヒーの方が好きです", "朝は紅茶の方が好きです", false}, // different context
	{"ja", "パリに住んでいますか", "ベルリンに住んでいます", false},      // question
	{"ja", "パリで働いています", "パリに住んでいます", false},         // unrelated fact
	{"ja", "パリに住んでいません", "パリに住んでいます", false},        // negation
	{"ja", "私の上司は優しい人です", "私の上司はペトラです", false},      // description
	{"ja", "私の好きな映画は千と千尋の神隠しです", "私の好きな映画はトトロです", true},
	{"ja", "私の好きな映画はトトロとラピュタです", "私の好きな映画は千と千尋の神隠しです", false}, // two facts
	{"ja", "新しい上司は高橋さんです", "上司は佐藤さんです", true},
	{"ja", "私の上司は高橋さんです", "上司は佐藤さんです", true},
	{"ja", "上司は出張中です", "上司は佐藤さんです", false},  // description
	{"ja", "上司は佐藤さんです", "私の上司は佐藤です", false}, // same value
	{"ja", "今はテスラに乗っています", "プリウスに乗っています", true},
	{"ja", "バスに乗っています", "プリウスに乗っています", false},    // unrelated fact
	{"ja", "電車に乗っています", "プリウスに乗っています", false},    // unrelated fact
	{"ja", "夫はテスラに乗っています", "プリウスに乗っています", false}, // different person
	{"ja", "私たちは福岡に引っ越しました", "横浜に住んでいます", true},

	// Korean.
	{"ko", "저는 부산으로 이사했어요", "저는 서울에 살아요", true},
	{"ko", "지금은 부산에 살아요", "서울에 살아요", true},
	{"ko", "저는 삼성에서 일해요", "저는 LG에서 일해요", true},
	{"ko", "제 딸은 일곱 살이에요", "제 딸은 여섯 살이에요", true},
	{"ko", "제가 제일 좋아하는 색은 초록색이에요", "제가 제일 좋아하는 색은 파란색이에요", true},
	{"ko", "이제 커피를 더 좋아해요", "저는 차를 더 좋아해요", true},
	{"ko", "제 새 매니저는 요나스예요", "제 매니저는 페트라예요", true},
	{"ko", "서울에 살아요", "서울로 이사했어요", false},              // same value
	{"ko", "제 오빠는 빈에 살아요", "제 언니는 프라하에 살아요", false},    // different person
	{"ko", "예전에 서울에 살았어요", "부산에 살아요", false},           // past
	{"ko", "저녁에는 커피를 더 좋아해요", "아침에는 차를 더 좋아해요", false}, // different context
	{"ko", "서울에 안 살아요", "서울에 살아요", false},              // negation
	{"ko", "서울에서 일해요", "서울에 살아요", false},               // unrelated fact
	{"ko", "서울에 살아요?", "부산에 살아요", false},               // question
	{"ko", "제 강아지는 초코예요", "제 강아지는 보리예요", false},        // different entity
	{"ko", "요즘은 테슬라를 타요", "저는 아반떼를 타요", true},
	{"ko", "저는 버스를 타요", "저는 아반떼를 타요", false},     // unrelated fact
	{"ko", "저는 커피를 타요", "저는 아반떼를 타요", false},     // unrelated fact
	{"ko", "저는 아반떼를 안 타요", "저는 테슬라를 타요", false},  // negation
	{"ko", "제 남편은 테슬라를 타요", "저는 아반떼를 타요", false}, // different person
	{"ko", "새 팀장님은 최유진 씨예요", "제 팀장님은 김민수 씨예요", true},
	{"ko", "팀장님이 최유진 씨로 바뀌었어요", "제 팀장님은 김민수 씨예요", true},
	{"ko", "팀장님은 휴가예요", "제 팀장님은 김민수 씨예요", false},    // description
	{"ko", "제 팀장님은 김민수예요", "제 팀장님은 김민수 씨예요", false}, // same value
	{"ko", "우리는 부산으로 이사했어요", "저는 서울에 살아요", true},
	{"ko", "제 언니는 부산으로 이사했어요", "저는 서울에 살아요", false}, // different person
}

func TestSupersedes(t *testing.T) {
	for _, tt := range supersedeCases {
		if got := Supersedes(tt.newText, tt.oldText); got != tt.want {
			t.Errorf("%s: Supersedes(%q, %q) = %v, want %v", tt.lang, tt.newText, tt.oldText, got, tt.want)
		}
	}
}

// TestSupersedesCoverage keeps the table honest: every language has at least
// ten pairs, and at least a third of all pairs must not supersede.
func TestSupersedesCoverage(t *testing.T) {
	perLang := map[string]int{}
	mustNot := 0
	for _, tt := range supersedeCases {
		perLang[tt.lang]++
		if !tt.want {
			mustNot++
		}
	}
	for _, lang := range []string{"en", "cs", "de", "zh", "ja", "ko"} {
		if perLang[lang] < 10 {
			t.Errorf("%s has %d pairs, want at least 10", lang, perLang[lang])
		}
	}
	if 3*mustNot < len(supersedeCases) {
		t.Errorf("%d of %d pairs must not supersede, want at least a third", mustNot, len(supersedeCases))
	}
}

func TestFactSlot(t *testing.T) {
	tests := []struct {
		in   string
		want Slot
		ok   bool
	}{
		{"I live in Paris", Slot{"i", "home", "paris"}, true},
		{"I moved to Berlin!", Slot{"i", "home", "berlin"}, true},
		{"Remember that I live in Berlin now", Slot{"i", "home", "berlin"}, true},
		{"I work at the harbour authority now", Slot{"i", "employer", "harbour authority"}, true},
		{"My little sister is 12", Slot{"my younger sister", "age", "12"}, true},
		{"My dog Rex is three years old", Slot{"my dog rex", "age", "3"}, true},
		{"My favorite color is blue", Slot{"i", "favourite colour", "blue"}, true},
		{"I prefer tea in the morning", Slot{"i", "preference:in morning", "tea"}, true},
		{"I prefer tea", Slot{"i", "preference:", "tea"}, true},
		{"My phone number is (555) 010-9999", Slot{"i", "phone", "5550109999"}, true},
		{"My sister's email is Anna@Example.com", Slot{"my sister", "email", "anna@example.com"}, true},
		{"My new manager is Jonas", Slot{"i", "manager", "jonas"}, true},
		{"I drive a Tesla", Slot{"i", "car", "tesla"}, true},
		{"Přestěhovala jsem se do Prahy", Slot{"i", "home", "prahy"}, true},
		{"Mé dceři je sedm let", Slot{"my daughter", "age", "7"}, true},
		{"Ich bin vierunddreißig Jahre alt", Slot{"i", "age", "34"}, true},
		{"Ich bevorzuge den dunklen Modus im Editor", Slot{"i", "preference:im editor", "dunklen modus"}, true},
		{"我在编辑器里更喜欢深色模式", Slot{"i", "preference:编辑器", "深色模式"}, true},
		{"我姐姐住在布拉格", Slot{"my older sister", "home", "布拉格"}, true},
		{"娘は7歳になりました", Slot{"my daughter", "age", "7"}, true},
		{"私の名前はアンナです", Slot{"i", "name", "アンナ"}, true},
		{"저는 서른네 살이에요", Slot{"i", "age", "34"}, true},
		{"제 전화번호는 010-1234-5678이에요", Slot{"i", "phone", "01012345678"}, true},
		{"I'm based in Porto now", Slot{"i", "home", "porto"}, true},
		{"We've moved to Brno", Slot{"i", "home", "brno"}, true},
		{"I joined Accenture", Slot{"i", "employer", "accenture"}, true},
		{"Seit März wohne ich in Kiel", Slot{"i", "home", "kiel"}, true},
		{"Ich bin jetzt bei Aldi", Slot{"i", "employer", "aldi"}, true},
		{"Jezdím Škodou Fabia", Slot{"i", "car", "škodou fabia"}, true},
		{"Odstěhovali jsme se do Berouna", Slot{"i", "home", "berouna"}, true},
		{"我最喜欢的电影是霸王别姬", Slot{"i", "favourite movie", "霸王别姬"}, true},
		{"我开丰田卡罗拉", Slot{"i", "car", "丰田卡罗拉"}, true},
		{"我们搬家了，现在住在青岛", Slot{"i", "home", "青岛"}, true},
		{"私の好きな映画は千と千尋の神隠しです", Slot{"i", "favourite movie", "千と千尋の神隠し"}, true},
		{"上司は佐藤さんです", Slot{"i", "manager", "佐藤"}, true},
		{"プリウスに乗っています", Slot{"i", "car", "プリウス"}, true},
		{"저는 아반떼를 타요", Slot{"i", "car", "아반떼"}, true},
		{"제 팀장님은 김민수 씨예요", Slot{"i", "manager", "김민수"}, true},
		{"I joined a gym", Slot{}, false},
		{"Ich bin bei Oma", Slot{}, false},
		{"我开会", Slot{}, false},
		{"自転車に乗っています", Slot{}, false},
		{"스키를 타요", Slot{}, false},
		{"I live in Paris with my wife", Slot{}, false},
		{"I lived in Paris", Slot{}, false},
		{"My dog Rex is a beagle", Slot{}, false},
		{"my wife is Anna", Slot{}, false},
		{"My car is red", Slot{}, false},
		{"I work at home", Slot{}, false},
		{"I moved to a new flat", Slot{}, false},
		{"I moved to Berlin in 2015", Slot{}, false},
		{"I live in Berlin. I work at Bosch", Slot{}, false},
		{"Where do I live?", Slot{}, false},
		{"We live in Oslo", Slot{}, false},
		{"I live in \xff\xfe", Slot{}, false},
		{"", Slot{}, false},
	}
	for _, tt := range tests {
		got, ok := FactSlot(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("FactSlot(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzSupersedes(f *testing.F) {
	for _, tt := range supersedeCases {
		f.Add(tt.newText, tt.oldText)
	}
	f.Add("\xff\xfe I live in Paris", "I live in \xc3")
	f.Add("my "+strings.Repeat("sister's ", 30)+"phone is 555 0100", "十十十岁")
	f.Fuzz(func(t *testing.T, a, b string) {
		Supersedes(a, b)
		if Supersedes(a, a) {
			t.Fatalf("Supersedes(%q, itself) = true", a)
		}
		s, ok := FactSlot(a)
		if !ok {
			if s != (Slot{}) {
				t.Fatalf("FactSlot(%q) = %+v without ok", a, s)
			}
			return
		}
		if s.Subject == "" || s.Key == "" || s.Value == "" || !utf8.ValidString(s.Subject+s.Key+s.Value) {
			t.Fatalf("FactSlot(%q) = %+v, an empty or invalid field", a, s)
		}
	})
}

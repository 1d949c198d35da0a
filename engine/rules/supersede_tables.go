package rules

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The slot rules, built from each language's patterns and word tables
// below; parseSlotFact (supersede.go) runs them.

var slotRules = buildSlotRules()

func buildSlotRules() []slotRule {
	var rules []slotRule
	for _, lang := range []slotLang{langEnglish, langGerman, langCzech, langChinese, langJapanese, langKorean} {
		vars := strings.NewReplacer(
			"{rel}", alternation(relations[lang]),
			"{adj}", alternation(relationAdjectives[lang]),
			"{name}", `[\p{L}][\p{L}'-]*`,
			"{manager}", alternation(wordsFor(genericKeys[lang], "manager")),
		)
		for _, p := range slotPatterns[lang] {
			frag := slotFragments[lang]
			expr := vars.Replace(frag.Replace(frag.Replace(p.expr))) // fragments nest one level
			rules = append(rules, slotRule{lang: lang, kind: p.kind, re: regexp.MustCompile("(?i)^" + expr + "$")})
		}
	}
	return rules
}

// wordsFor keeps the words of byWord that stand for key.
func wordsFor(byWord map[string]string, key string) map[string]string {
	m := map[string]string{}
	for w, k := range byWord {
		if k == key {
			m[w] = k
		}
	}
	return m
}

// alternation turns a word list into a regexp alternation, longest first so
// that 여동생 is tried before 동생.
func alternation(m map[string]string) string {
	words := slices.Collect(maps.Keys(m))
	slices.SortFunc(words, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), cmp.Compare(a, b))
	})
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(words, "|")
}

type slotPattern struct {
	kind slotKind
	expr string
}

// slotFragments are each language's shared pieces of a pattern: the
// subject ({subj}), a relative as the subject ({subj3}), a number, a
// preference's context.
var slotFragments = map[slotLang]*strings.Replacer{
	langEnglish: strings.NewReplacer(
		"{subj}", `(?:i|my (?:(?P<adj>{adj}) )?(?P<rel>{rel})(?: (?P<name>{name}))?)`,
		"{rel3}", `my (?:(?P<adj>{adj}) )?(?P<rel>{rel})(?: (?P<name>{name}))?`,
		"{num}", `(?P<num>\d{1,3}|[a-z]+(?:[ -][a-z]+)??)`,
		"{ctx}", `(?:in|on|at|for|when|during|after|before|while|with) [^,]+?`,
		"{ctx2}", `(?:in|on|at|for|when|during|after|before|while|with|from) .+`,
	),
	langGerman: strings.NewReplacer(
		"{subj}", `(?:ich|{rel3})`,
		"{rel3}", `(?:mein|meine) (?:(?P<adj>{adj}) )?(?P<rel>{rel})(?: (?P<name>{name}))?`,
		"{num}", `(?P<num>\d{1,3}|\p{L}+)`,
		"{ctx}", `(?:am|im|in|an|auf|bei|beim|für|nach|vor|zum|zur|während) [^,]+?|morgens|abends|mittags|nachmittags|tagsüber|unterwegs|nachts`,
		"{ctx2}", `(?:am|im|in|an|auf|bei|beim|für|nach|vor|zum|zur|während) .+|morgens|abends|mittags|nachmittags|tagsüber|unterwegs|nachts`,
		"{prefer}", `(?:bevorzuge|(?:trinke|mag|nehme|esse|benutze|nutze) lieber)`,
	),
	langCzech: strings.NewReplacer(
		"{me}", `(?:já )?`,
		"{rel3}", `{poss} (?:(?P<adj>{adj}) )?(?P<rel>{rel})(?: (?P<name>{name}))?`,
		"{poss}", `(?:můj|moje|má|mé|mí|moji|mojí|mému|mýmu|mojemu)`,
		"{num}", `(?P<num>\d{1,3}|\p{L}+(?: \p{L}+)??)`,
		"{years}", `(?:let|roky|rok|roků)`,
		"{ctx}", `(?:v|ve|na|při|po|před|k|ke|během|u|o) [^,]+?|ráno|večer|odpoledne|dopoledne|doma|v noci`,
		"{ctx2}", `(?:v|ve|na|při|po|před|k|ke|během|u|o) .+|ráno|večer|odpoledne|dopoledne|doma`,
		"{prefer}", `(?:preferuji|preferuju|dávám přednost|mám radši|mám raději|piju radši|piju raději|piji raději)`,
		"{moved}", `(?:pře|od)stěhoval`,
	),
	langChinese: strings.NewReplacer(
		"{subj}", `我(?:的?(?P<rel>{rel}))?`,
		"{num}", `(?P<num>\d{1,3}|[一二两三四五六七八九十]{1,3})`,
	),
	langJapanese: strings.NewReplacer(
		"{subj}", `(?:(?:私|僕|わたし|俺|あたし)は|(?:(?:私|僕|わたし)の)?(?P<rel>{rel})(?:は|が))?`,
		"{me}", `(?:(?:私|僕|わたし)(?:は|の))?`,
		"{num}", `(?P<num>\d{1,3}|[一二三四五六七八九十]{1,3})`,
		"{moved}", `(?:に|へ)(?:引っ越しました|引っ越した|引越しました|引越した|引っ越してきました|引っ越して来ました|移住しました|移りました)`,
		"{honorific}", `(?:さん|さま|様|氏)`,
	),
	langKorean: strings.NewReplacer(
		"{subj}", `(?:(?:저는|나는|전|난|제가|내가) |(?:(?:제|내|우리) )?(?P<rel>{rel})(?:은|는|이|가) )?`,
		"{num}", `(?P<num>\d{1,3}|[가-힣]{1,4})`,
		"{copula}", `(?:이에요|예요|입니다|이야|야|이다)`,
		"{moved}", `(?:으로|로) (?:이사했어요|이사 했어요|이사했습니다|이사 왔어요|이사왔어요|이사 갔어요|이사갔어요|이사했다|이사했어|이사 왔다)`,
		"{honorific}", `(?: ?씨| ?님)`,
	),
}

// slotPatterns lists each language's statement shapes, specific before
// generic: an age before "my X is Y".
var slotPatterns = map[slotLang][]slotPattern{
	langEnglish: {
		{kindPreference, `(?:(?P<ctx>{ctx}),? )?{subj} (?:prefer|prefers) (?P<val>.+?)(?: (?P<ctx2>{ctx2}))?`},
		{kindHome, `{subj} (?:live|lives|am living|is living|reside|resides) in (?P<val>.+)`},
		{kindHome, `{subj} (?:have |has )?(?:moved|relocated) to (?P<val>.+)`},
		{kindHome, `we (?:have )?(?:moved|relocated) to (?P<val>.+)`},
		{kindHome, `{subj} (?:am|is) based in (?P<val>.+)`},
		{kindEmployer, `{subj} (?:work|works|am working|is working) (?:at|for) (?P<val>.+)`},
		{kindEmployer, `{subj} (?:am|is) employed (?:at|by) (?P<val>.+)`},
		{kindEmployer, `{subj} (?:have |has )?(?:started|got|took|accepted|landed) (?:a |my |her |his )?(?:new )?(?:job|position|role) (?:at|with) (?P<val>.+)`},
		{kindEmployer, `{subj} (?:have |has )?(?:started|began) (?:working|to work) (?:at|for) (?P<val>.+)`},
		{kindNamedEmployer, `{subj} (?:have |has )?(?:joined|started at) (?P<val>.+)`},
		{kindCar, `{subj} (?:drive|drives) (?:a|an) (?P<val>.+)`},
		{kindFavourite, `(?:my|{rel3}'s) (?:favou?rite|fave|fav) (?P<fav>[\p{L}-]+(?: [\p{L}-]+){0,2}) is (?P<val>.+)`},
		{kindGeneric, `{rel3}'s (?:new |current )?(?P<key>[\p{L}-]+(?: [\p{L}-]+){0,2}) is (?P<val>.+)`},
		{kindAge, `{subj} (?:am|is|'s|has turned|have turned|turned) {num}(?: years? old| yrs? old)?`},
		{kindGeneric, `my (?:new |current |present )?(?P<key>[\p{L}-]+(?: [\p{L}-]+){0,2}) is (?P<val>.+)`},
	},
	langGerman: {
		{kindPreference, `(?P<ctx>{ctx}) (?:bevorzuge ich|(?:trinke|mag|nehme|esse|benutze|nutze) ich lieber) (?P<val>.+)`},
		{kindPreference, `ich {prefer} (?P<val>.+?)(?: (?P<ctx2>{ctx2}))?`},
		{kindHome, `{subj} (?:wohne|wohnt|lebe|lebt) (?:in|im) (?P<val>.+)`},
		{kindHome, `(?:ich bin|wir sind|{rel3} ist) (?:nach|in|ins) (?P<val>.+?) (?:gezogen|umgezogen)`},
		{kindEmployer, `{subj} (?:arbeite|arbeitet) (?:bei|für) (?P<val>.+)`},
		{kindEmployer, `ich habe (?:einen |eine )?(?:neuen |neue )?(?:job|stelle|arbeit) bei (?P<val>.+)`},
		{kindEmployer, `ich habe bei (?P<val>.+?) angefangen`},
		{kindEmployer, `ich bin bei (?P<val>.+?) angestellt`},
		{kindNamedEmployer, `ich bin bei (?P<val>.+)`},
		{kindCar, `ich fahre (?:einen|ein|eine) (?P<val>.+)`},
		{kindAge, `(?:ich bin|{rel3} ist) {num}(?: jahre alt| jahre| geworden| jahre alt geworden)?`},
		{kindFavourite, `(?:mein|meine) lieblings(?P<fav>[\p{L}-]+) ist (?P<val>.+)`},
		{kindGeneric, `(?:mein|meine) (?:neue |neuer |neues |neuen |aktuelle |aktueller )?(?P<key>[\p{L}-]+(?: [\p{L}-]+)?) ist (?P<val>.+)`},
	},
	langCzech: {
		{kindPreference, `(?:(?P<ctx>{ctx}) )?{me}{prefer} (?P<val>.+?)(?: (?P<ctx2>{ctx2}))?`},
		{kindHome, `{me}(?:bydlím|bydlim|žiju|žiji) (?:v|ve) (?P<val>.+)`},
		{kindHome, `{rel3} (?:bydlí|žije) (?:v|ve) (?P<val>.+)`},
		{kindHome, `{me}(?:jsem se {moved}(?:a)?|{moved}(?:a)? jsem se) do (?P<val>.+)`},
		{kindHome, `(?:my )?(?:jsme se {moved}i|{moved}i jsme se) do (?P<val>.+)`},
		{kindHome, `{rel3} se {moved}(?:a)? do (?P<val>.+)`},
		{kindEmployer, `{me}(?:pracuji|pracuju|dělám) (?:v|ve|u|pro) (?P<val>.+)`},
		{kindEmployer, `{me}(?:jsem nastoupil(?:a)?|nastoupil(?:a)? jsem) (?:do|k|ke) (?P<val>.+)`},
		{kindEmployer, `{me}mám (?:novou )?práci (?:v|ve|u) (?P<val>.+)`},
		{kindEmployer, `{rel3} (?:pracuje|dělá) (?:v|ve|u|pro) (?P<val>.+)`},
		{kindCar, `{me}(?:jezdím|jezdim) (?P<val>.+)`},
		{kindCar, `{me}mám (?:nové |nový )?auto (?P<val>.+)`},
		{kindAge, `je mi {num}(?: {years})?`},
		{kindAge, `{rel3} má {num} {years}`},
		{kindAge, `(?:{poss} )?(?:(?P<adj>{adj}) )?(?P<rel>{rel})(?: (?P<name>{name}))? je {num}(?: {years})?`},
		{kindFavourite, `{poss} (?:nej)?oblíben[áýé] (?P<fav>[\p{L}-]+(?: [\p{L}-]+)??) je (?P<val>.+)`},
		{kindGeneric, `{poss} (?:nový |nová |nové |aktuální |současný |současná )?(?P<key>[\p{L}-]+(?: [\p{L}-]+)?) je (?P<val>.+)`},
	},
	langChinese: {
		{kindPreference, `(?:(?P<ctx>[^我,]{1,12}?),?)??我(?P<ctx2>[^,]{1,12}?)??(?:更喜欢|更爱|比较喜欢|偏好|偏爱|更倾向于)(?:喝|吃|用|看|听)?(?P<val>.+)`},
		{kindHome, `{subj}(?:住在|生活在|定居在|住)(?P<val>.+?)了?`},
		{kindHome, `(?:我们|{subj})(?:搬到了|搬到|搬去了|搬去|搬家到了|搬家到|搬回了|搬回)(?P<val>.+?)了?`},
		{kindHome, `(?:我们|{subj})搬家了,?(?:我们|我)?(?:住在|住)(?P<val>.+?)了?`},
		{kindEmployer, `{subj}在(?P<val>.+?)(?:工作|上班|任职|就职)了?`},
		{kindEmployer, `{subj}(?:加入了|入职了|跳槽到了|跳槽到|跳槽去了|跳槽去)(?P<val>.+)`},
		{kindEmployer, `{subj}(?:去|到)(?P<val>.+?)(?:工作|上班)了`},
		{kindCar, `{subj}开(?:的是)?(?P<val>.+?)了?`},
		{kindAge, `{subj}{num}(?:岁|周岁)了?`},
		{kindFavourite, `{subj}(?:最喜欢|最爱)的(?P<fav>[^是]{1,8}?)是(?P<val>.+)`},
		{kindGeneric, `我的?(?P<rel>{rel})的(?:新)?(?P<key>[^是的]{1,8}?)是(?P<val>.+)`},
		{kindGeneric, `我的(?:新)?(?P<key>[^是的]{1,8}?)是(?P<val>.+)`},
	},
	langJapanese: {
		{kindHome, `{subj}(?P<val>.+?)(?:に住んでいます|に住んでいる|に住んでる|に住んでおります|で暮らしています|で暮らしている|で暮らしてる)`},
		{kindHome, `(?:私|僕|わたし)(?:たち|達)は(?P<val>.+?){moved}`},
		{kindHome, `{subj}(?P<val>.+?){moved}`},
		{kindEmployer, `{subj}(?P<val>.+?)(?:で働いています|で働いている|で働いてる|で働いております|に勤めています|に勤めている|に勤めてる|に勤務しています|に就職しました|に転職しました|に入社しました|で働き始めました)`},
		{kindCar, `{subj}(?P<val>.+?)に(?:乗っています|乗っている|乗ってる|乗ってます|乗っております)`},
		{kindAge, `{subj}{num}(?:歳|才)(?:です|だ|になりました|になった)?`},
		{kindFavourite, `{me}(?:一番|いちばん)?好きな(?P<fav>.+?)は(?P<val>.+?)(?:です|だ)?`},
		{kindPreference, `(?:(?:私|僕|わたし)は)?(?:(?P<ctx>.{1,10}?)(?:では|には|は)、?)?(?P<val>.+?)(?:(?:の方|のほう)が(?:好き|いい)(?:です|だ)?|を好みます|を好む)`},
		{kindGeneric, `(?:新しい)?(?P<key>{manager})は(?P<val>.+?{honorific})(?:です|だ)`},
		{kindGeneric, `(?:私|僕|わたし)の(?:新しい)?(?P<key>.+?)は(?P<val>.+?)(?:です|だ)`},
	},
	langKorean: {
		{kindHome, `{subj}(?P<val>\S+?)(?:에|에서) (?:살아요|살고 있어요|삽니다|살고 있습니다|살아|살고 있다|산다|살고 있어)`},
		{kindHome, `{subj}(?P<val>\S+?){moved}`},
		{kindHome, `(?:우리는|저희는|우린|저흰|우리가|저희가) (?P<val>\S+?){moved}`},
		{kindEmployer, `{subj}(?P<val>\S+?)(?:에서 (?:일해요|일하고 있어요|일합니다|일하고 있습니다|일해|근무해요|근무하고 있어요|근무합니다|일하기 시작했어요)|에 (?:다녀요|다니고 있어요|다닙니다|다녀|취직했어요|취직했습니다|입사했어요|입사했습니다)|(?:으로|로) 이직했(?:어요|습니다))`},
		{kindCar, `{subj}(?P<val>\S+?)(?:을|를) (?:타요|타고 있어요|탑니다|타고 있습니다|타고 다녀요|타고 다닙니다|타고 있어|타고 다녀|타)`},
		{kindAge, `{subj}{num} ?살(?:이에요|이예요|입니다|이야|이다|이 됐어요|이 되었어요|이 됐습니다|이 됐어|이 됐다)?`},
		{kindFavourite, `(?:(?:제가|내가|저는|나는) )?(?:제일|가장) 좋아하는 (?P<fav>\S+?)(?:은|는|이|가) (?P<val>\S+?){copula}`},
		{kindPreference, `(?:(?:저는|나는|전|난) )?(?:(?P<ctx>\S+?)(?:에서는|에는|엔|에선|때는) )?(?P<val>.+?)(?:을|를|이|가) (?:더 좋아해요|더 좋아합니다|더 좋아해|더 좋아요|더 좋아|선호해요|선호합니다|선호해)`},
		{kindGeneric, `(?:(?:제|내|우리) )?(?:새 |새로운 )?(?P<key>{manager})(?:은|는|이|가) (?P<val>\S+?{honorific}){copula}`},
		{kindGeneric, `(?:(?:제|내|우리) )?(?P<key>{manager})(?:이|가) (?P<val>\S+?{honorific})(?:으로|로) (?:바뀌었어요|바뀌었습니다|바뀌었어|바뀌었다)`},
		{kindGeneric, `(?:제|내) (?:새 |새로운 )?(?P<key>(?:\S+ )?\S+?)(?:은|는|이|가) (?P<val>\S+?){copula}`},
	},
}

// Word lists. Keys are lower case; relatives and adjectives map to the
// English words a Subject uses.

var relations = map[slotLang]map[string]string{
	langEnglish: {
		"wife": "wife", "husband": "husband", "partner": "partner", "spouse": "spouse",
		"son": "son", "daughter": "daughter", "child": "child", "kid": "child", "baby": "baby",
		"sister": "sister", "brother": "brother", "parents": "parents",
		"mother": "mother", "mom": "mother", "mum": "mother", "father": "father", "dad": "father",
		"grandmother": "grandmother", "grandma": "grandmother", "granny": "grandmother",
		"grandfather": "grandfather", "grandpa": "grandfather", "aunt": "aunt", "uncle": "uncle",
		"cousin": "cousin", "niece": "niece", "nephew": "nephew", "girlfriend": "girlfriend",
		"boyfriend": "boyfriend", "fiancé": "fiancé", "fiancée": "fiancée", "fiance": "fiancé",
		"fiancee": "fiancée", "friend": "friend", "best friend": "best friend", "roommate": "roommate",
		"flatmate": "flatmate", "dog": "dog", "puppy": "dog", "cat": "cat", "kitten": "cat",
	},
	langCzech: {
		"sestra": "sister", "ségra": "sister", "bratr": "brother", "brácha": "brother",
		"manželka": "wife", "žena": "wife", "manžel": "husband", "muž": "husband",
		"partner": "partner", "partnerka": "partner", "přítel": "boyfriend", "přítelkyně": "girlfriend",
		"kamarád": "friend", "kamarádka": "friend", "syn": "son", "dcera": "daughter", "dítě": "child",
		"máma": "mother", "maminka": "mother", "matka": "mother", "mamka": "mother",
		"táta": "father", "tatínek": "father", "otec": "father", "taťka": "father",
		"babička": "grandmother", "děda": "grandfather", "dědeček": "grandfather", "teta": "aunt",
		"strýc": "uncle", "strejda": "uncle", "bratranec": "cousin", "sestřenice": "cousin",
		"pes": "dog", "kočka": "cat", "kocour": "cat", "rodiče": "parents",
		// Dative, as in "mé dceři je šest".
		"sestře": "sister", "bratrovi": "brother", "bratru": "brother", "manželce": "wife", "ženě": "wife",
		"manželovi": "husband", "synovi": "son", "synu": "son", "dceři": "daughter", "dítěti": "child",
		"mámě": "mother", "mamince": "mother", "matce": "mother", "tátovi": "father", "otci": "father",
		"tatínkovi": "father", "babičce": "grandmother", "dědovi": "grandfather", "dědečkovi": "grandfather",
		"psovi": "dog", "kočce": "cat", "příteli": "boyfriend", "přítelkyni": "girlfriend",
	},
	langGerman: {
		"schwester": "sister", "bruder": "brother", "frau": "wife", "ehefrau": "wife",
		"mann": "husband", "ehemann": "husband", "partner": "partner", "partnerin": "partner",
		"freund": "boyfriend", "freundin": "girlfriend", "sohn": "son", "tochter": "daughter",
		"kind": "child", "mutter": "mother", "mama": "mother", "mutti": "mother",
		"vater": "father", "papa": "father", "vati": "father", "oma": "grandmother",
		"großmutter": "grandmother", "opa": "grandfather", "großvater": "grandfather",
		"tante": "aunt", "onkel": "uncle", "cousin": "cousin", "cousine": "cousin",
		"hund": "dog", "katze": "cat", "kater": "cat", "eltern": "parents",
	},
	langChinese: {
		"姐姐": "older sister", "妹妹": "younger sister", "哥哥": "older brother", "弟弟": "younger brother",
		"妻子": "wife", "老婆": "wife", "太太": "wife", "丈夫": "husband", "老公": "husband",
		"儿子": "son", "女儿": "daughter", "孩子": "child", "妈妈": "mother", "母亲": "mother",
		"爸爸": "father", "父亲": "father", "奶奶": "grandmother", "爷爷": "grandfather",
		"男朋友": "boyfriend", "女朋友": "girlfriend", "朋友": "friend", "狗": "dog", "猫": "cat",
		"父母": "parents",
	},
	langJapanese: {
		"姉": "older sister", "お姉さん": "older sister", "姉さん": "older sister", "妹": "younger sister",
		"兄": "older brother", "お兄さん": "older brother", "兄さん": "older brother", "弟": "younger brother",
		"妻": "wife", "夫": "husband", "旦那": "husband", "息子": "son", "娘": "daughter",
		"子供": "child", "子ども": "child", "母": "mother", "母親": "mother", "お母さん": "mother",
		"母さん": "mother", "父": "father", "父親": "father", "お父さん": "father", "父さん": "father",
		"彼氏": "boyfriend", "友達": "friend", "友人": "friend", "犬": "dog", "猫": "cat", "両親": "parents",
	},
	langKorean: {
		"언니": "older sister", "누나": "older sister", "여동생": "younger sister",
		"오빠": "older brother", "형": "older brother", "남동생": "younger brother", "동생": "younger sibling",
		"아내": "wife", "와이프": "wife", "부인": "wife", "남편": "husband", "아들": "son", "딸": "daughter",
		"아이": "child", "엄마": "mother", "어머니": "mother", "아빠": "father", "아버지": "father",
		"남자친구": "boyfriend", "남친": "boyfriend", "여자친구": "girlfriend", "여친": "girlfriend",
		"친구": "friend", "강아지": "dog", "개": "dog", "고양이": "cat", "부모님": "parents",
	},
}

var relationAdjectives = map[slotLang]map[string]string{
	langEnglish: {
		"older": "older", "elder": "older", "big": "older", "younger": "younger", "little": "younger",
		"baby": "younger", "oldest": "oldest", "eldest": "oldest", "youngest": "youngest",
	},
	langCzech: {"starší": "older", "mladší": "younger", "nejstarší": "oldest", "nejmladší": "youngest"},
	langGerman: {
		"ältere": "older", "älterer": "older", "große": "older", "großer": "older",
		"jüngere": "younger", "jüngerer": "younger", "kleine": "younger", "kleiner": "younger",
		"älteste": "oldest", "ältester": "oldest", "jüngste": "youngest", "jüngster": "youngest",
	},
}

// notNames are words a pattern could take for a relative's name: "my
// sister also lives in ...".
var notNames = setOf(
	"also", "still", "really", "just", "now", "then", "finally", "recently", "currently", "already",
	"too", "actually", "has", "have", "had", "is", "was", "will", "would", "never", "not", "no", "and",
	"who", "which", "that", "jetzt", "auch", "noch", "schon", "ist", "hat", "wohnt", "teď", "už",
	"také", "taky", "ještě", "se", "je", "má", "bydlí",
)

var (
	articles = map[slotLang]map[string]bool{
		langEnglish: setOf("the", "a", "an"),
		langGerman:  setOf("der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines"),
	}
	indefiniteArticles = map[slotLang]map[string]bool{
		langEnglish: setOf("a", "an"),
		langGerman:  setOf("ein", "eine", "einen", "einem", "einer", "eines"),
	}
	contextDeterminers = setOf(
		"the", "a", "an", "my", "your", "our", "der", "die", "das", "dem", "den", "des", "ein", "eine",
		"einem", "einer", "mein", "meine", "meinem", "meiner", "meinen", "můj", "mém", "mé", "mojí",
		"mým", "svém", "svým", "mých",
	)
)

// valueStops are words a value of one thing does not contain: conjunctions,
// prepositions that add a place or time, hedges.
var valueStops = map[slotLang]map[string]bool{
	langEnglish: setOf(
		"and", "or", "but", "with", "since", "because", "when", "while", "where", "who", "which", "that",
		"until", "till", "ago", "last", "yesterday", "also", "too", "not", "no", "never", "still", "if",
		"than", "then", "as", "so", "from", "in", "at", "on", "for", "to", "by", "near", "over", "instead",
		"rather", "during", "after", "before", "about", "like", "plus", "both", "either", "i", "me", "we",
		"you", "think", "guess", "maybe",
	),
	langGerman: setOf(
		"und", "oder", "aber", "mit", "seit", "weil", "wenn", "wo", "bis", "vor", "auch", "noch", "nicht",
		"kein", "keine", "als", "dass", "in", "im", "an", "auf", "bei", "beim", "für", "nach", "zu", "zum",
		"zur", "von", "vom", "aus", "statt", "ich", "glaube", "vielleicht",
	),
	langCzech: setOf(
		"a", "ale", "nebo", "i", "s", "se", "od", "do", "protože", "když", "kde", "který", "která", "které",
		"až", "také", "taky", "ještě", "už", "ne", "než", "jako", "v", "ve", "na", "u", "pro", "k", "ke",
		"po", "před", "při", "za", "z", "ze", "o", "během", "místo", "já", "asi", "myslím", "možná",
	),
}

var (
	valueStopSubstrings = map[slotLang][]string{
		langChinese: {
			"和", "跟", "与", "及", "但", "因为", "还", "不", "没", "以前", "或", "吗", "呢", "哪",
			"什么", "谁", "我", "你", "他", "她", "在", "别的", "别处",
		},
		langJapanese: {
			"は", "が", "を", "も", "、", "や", "から", "まで", "でも", "けど", "私", "僕", "どこ", "何", "誰",
		},
		langKorean: {"그리고", "하고", "어디", "뭐", "무엇", "누구", "언제"},
	}
	koreanValueStops = setOf("저", "나", "제", "내", "랑", "몇")
)

// vagueValues and vaguePrefixes describe a place instead of naming it: "I
// live in the city", "I moved to my parents' house", 新家.
var (
	vagueValues = map[slotLang]map[string]bool{
		langEnglish: setOf(
			"home", "city", "country", "countryside", "suburbs", "village", "town", "centre", "center",
			"flat", "apartment", "house", "area", "neighbourhood", "neighborhood", "here", "there",
			"remotely", "remote", "myself", "lot", "bit", "little", "office", "company", "car", "job", "work",
		),
		langCzech: setOf(
			"doma", "tady", "tam", "městě", "centru", "bytě", "domě", "vesnici", "sebe", "práci", "firmě",
			"firmy", "kanceláři",
		),
		langGerman:   setOf("hause", "zuhause", "stadt", "zentrum", "wohnung", "haus", "hier", "dort", "firma", "büro", "arbeit", "mir"),
		langChinese:  setOf("家", "家里", "这里", "那里", "市中心", "郊区", "农村", "城里", "公司", "别墅"),
		langJapanese: setOf("家", "自宅", "在宅", "ここ", "そこ", "都会", "田舎", "実家", "会社"),
		langKorean:   setOf("집", "여기", "거기", "시골", "도시", "회사"),
	}
	vaguePrefixes = map[slotLang][]string{
		langEnglish: {"my ", "our ", "your ", "his ", "her ", "their ", "another ", "same ", "other "},
		langGerman: {
			"mein", "unser", "neue ", "neuen ", "neuer ", "neues ", "neuem ", "andere", "gleiche",
		},
		langCzech: {
			"nový ", "nová ", "nové ", "nového ", "novou ", "novém ", "mého ", "mém ", "mou ", "mojí ",
			"našeho ", "naší ", "jiné ", "jiného ", "jinou ", "svého ", "svou ",
		},
		langChinese:  {"新", "另", "同", "我"},
		langJapanese: {"新", "別の"},
		langKorean:   {"새 ", "새로운 ", "다른 ", "우리 "},
	}
)

// notHomeHeads and notPlaces are what "I'm based in" or "we moved to" can
// name besides a home: an office, or a tool or platform a team moved to.
var (
	notHomeHeads = map[slotLang]map[string]bool{
		langEnglish: setOf("office", "offices", "branch", "hq", "headquarters", "campus", "team", "department", "lab", "site"),
	}
	notPlaces = map[slotLang]map[string]bool{
		langEnglish: setOf(
			"postgres", "postgresql", "mysql", "sqlite", "mongodb", "kubernetes", "k8s", "aws", "azure", "gcp",
			"cloud", "github", "gitlab", "bitbucket", "slack", "teams", "jira", "notion", "linux", "windows",
			"macos", "python", "rust", "go", "golang", "typescript", "java", "react", "vim", "neovim", "emacs",
			"vscode", "docker", "terraform", "monorepo", "microservices",
		),
	}
)

// notEmployers are what "I joined X", "I started at X" or "ich bin bei X"
// can name besides an employer: a club, a school, a social network, and in
// German a person or place one stays with or at.
var notEmployers = map[slotLang]map[string]bool{
	langEnglish: setOf(
		"club", "gym", "team", "army", "navy", "marines", "church", "choir", "band", "league", "society",
		"association", "community", "course", "class", "university", "college", "school", "academy",
		"twitter", "facebook", "instagram", "tiktok", "linkedin", "reddit", "discord", "mastodon", "bluesky",
		"snapchat", "whatsapp", "telegram", "strava", "tinder",
	),
	langGerman: setOf(
		"freunden", "freunde", "verwandten", "nachbarn", "kollegen", "bekannten", "familie", "leuten",
		"mutti", "vati", "eltern", "großeltern", "arzt", "ärztin", "zahnarzt", "friseur", "bewusstsein",
		"sinnen", "kräften", "laune", "gelegenheit", "bedarf", "facebook", "instagram", "twitter", "tiktok",
		"linkedin", "xing", "whatsapp",
	),
}

// notCars are what the looser car forms ride besides a car: 버스를 타요,
// バスに乗っています, "jezdím MHD" (public transport), "jezdím Uberem".
var notCars = map[slotLang]map[string]bool{
	langCzech: setOf("mhd", "uberem", "boltem", "liftagem", "regiojetem", "pendolinem", "flixbusem", "blablacarem"),
	langJapanese: setOf(
		"バス", "タクシー", "バイク", "エレベーター", "エスカレーター", "ボート", "ヨット", "モノレール", "トラム",
		"スクーター", "ケーブルカー", "ロープウェイ", "ジェットコースター", "ブランコ", "サーフボード", "スケボー",
		"スケートボード", "スキー", "スノーボード", "リフト", "ゴンドラ", "フェリー", "ベビーカー", "キックボード",
		"トラック", "レンタカー", "カーシェア", "jr",
	),
	langKorean: setOf(
		"버스", "지하철", "전철", "기차", "자전거", "비행기", "택시", "배", "말", "차", "자동차", "오토바이",
		"킥보드", "스쿠터", "스키", "보드", "스노보드", "스케이트", "썰매", "그네", "미끄럼틀", "엘리베이터",
		"에스컬레이터", "롤러코스터", "케이블카", "트램", "커피", "물", "우유", "간지럼", "추위", "더위", "눈치",
		"월급", "상", "용돈", "인기", "유모차", "카트", "트럭", "승용차", "전기차", "중고차", "ktx", "srt",
	),
}

// chineseCarMakes start the value of 我开X: 开 alone also opens, holds or
// runs things (开会, 开心, 开店, 开公司).
var chineseCarMakes = []string{
	"丰田", "本田", "日产", "马自达", "三菱", "斯巴鲁", "铃木", "雷克萨斯", "英菲尼迪", "讴歌", "大众", "奥迪",
	"宝马", "奔驰", "保时捷", "欧宝", "福特", "雪佛兰", "别克", "凯迪拉克", "林肯", "吉普", "特斯拉", "沃尔沃",
	"路虎", "捷豹", "标致", "雪铁龙", "雷诺", "菲亚特", "法拉利", "兰博基尼", "玛莎拉蒂", "现代", "起亚",
	"斯柯达", "比亚迪", "吉利", "长城", "哈弗", "长安", "红旗", "奇瑞", "五菱", "蔚来", "理想", "小鹏", "问界",
	"极氪", "领克", "小米", "零跑", "埃安", "荣威", "名爵",
}

// honorifics follow a person's name in a manager's value: 佐藤さん, 김민수 씨.
var honorifics = map[slotLang][]string{
	langJapanese: {"さん", "さま", "様", "氏"},
	langKorean:   {"씨", "님"},
}

var (
	numberUnits = map[slotLang]map[string]int{
		langEnglish: {
			"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
			"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
			"fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
		},
		langCzech: {
			"jeden": 1, "jedna": 1, "jedno": 1, "dva": 2, "dvě": 2, "tři": 3, "čtyři": 4, "pět": 5,
			"šest": 6, "sedm": 7, "osm": 8, "devět": 9, "deset": 10, "jedenáct": 11, "dvanáct": 12,
			"třináct": 13, "čtrnáct": 14, "patnáct": 15, "šestnáct": 16, "sedmnáct": 17, "osmnáct": 18,
			"devatenáct": 19,
		},
		langGerman: {
			"eins": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8,
			"neun": 9, "zehn": 10, "elf": 11, "zwölf": 12, "dreizehn": 13, "vierzehn": 14,
			"fünfzehn": 15, "sechzehn": 16, "siebzehn": 17, "achtzehn": 18, "neunzehn": 19,
		},
	}
	numberTens = map[slotLang]map[string]int{
		langEnglish: {
			"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
			"eighty": 80, "ninety": 90,
		},
		langCzech: {
			"dvacet": 20, "třicet": 30, "čtyřicet": 40, "padesát": 50, "šedesát": 60, "sedmdesát": 70,
			"osmdesát": 80, "devadesát": 90,
		},
		langGerman: {
			"zwanzig": 20, "dreißig": 30, "dreissig": 30, "vierzig": 40, "fünfzig": 50, "sechzig": 60,
			"siebzig": 70, "achtzig": 80, "neunzig": 90,
		},
	}
	koreanUnits = map[string]int{
		"한": 1, "하나": 1, "두": 2, "둘": 2, "세": 3, "셋": 3, "네": 4, "넷": 4, "다섯": 5, "여섯": 6,
		"일곱": 7, "여덟": 8, "아홉": 9,
	}
	koreanTens = map[string]int{
		"열": 10, "스물": 20, "스무": 20, "서른": 30, "마흔": 40, "쉰": 50, "예순": 60, "일흔": 70,
		"여든": 80, "아흔": 90,
	}
)

var favouriteTopics = map[slotLang]map[string]string{
	langEnglish: {"film": "movie", "meal": "food", "dish": "food"},
	langCzech: {
		"barva": "colour", "jídlo": "food", "film": "movie", "kniha": "book", "pití": "drink",
		"nápoj": "drink", "kapela": "band", "písnička": "song", "píseň": "song", "zvíře": "animal",
		"město": "city",
	},
	langGerman: {
		"farbe": "colour", "essen": "food", "gericht": "food", "film": "movie", "buch": "book",
		"getränk": "drink", "band": "band", "lied": "song", "song": "song", "sport": "sport",
		"tier": "animal", "stadt": "city",
	},
	langChinese: {
		"颜色": "colour", "食物": "food", "菜": "food", "电影": "movie", "书": "book", "饮料": "drink",
		"歌": "song", "运动": "sport", "动物": "animal", "城市": "city",
	},
	langJapanese: {
		"色": "colour", "食べ物": "food", "料理": "food", "映画": "movie", "本": "book", "飲み物": "drink",
		"歌": "song", "スポーツ": "sport", "動物": "animal", "街": "city",
	},
	langKorean: {
		"색": "colour", "색깔": "colour", "음식": "food", "영화": "movie", "책": "book", "음료": "drink",
		"노래": "song", "운동": "sport", "동물": "animal", "도시": "city",
	},
}

// genericKeys name the attributes of "my X is Y" that several words share.
var genericKeys = map[slotLang]map[string]string{
	langEnglish: keysOf(map[string][]string{
		"phone": {"phone", "phone number", "number", "mobile", "mobile number", "cell", "cell number",
			"cell phone", "cellphone", "cellphone number", "cell phone number", "telephone",
			"telephone number", "mobile phone number"},
		"email":    {"email", "e-mail", "email address", "e-mail address", "mail", "mail address"},
		"address":  {"address", "home address", "postal address"},
		"manager":  {"manager", "boss", "line manager", "team lead", "team leader", "supervisor"},
		"employer": {"employer", "company"},
		"name":     {"name", "first name"},
		"surname":  {"last name", "surname"},
		"timezone": {"timezone", "time zone"},
	}),
	langCzech: keysOf(map[string][]string{
		"phone":    {"telefon", "telefonní číslo", "číslo", "mobil", "tel"},
		"email":    {"e-mail", "email", "mail", "emailová adresa", "e-mailová adresa", "mailová adresa"},
		"address":  {"adresa"},
		"manager":  {"šéf", "šéfová", "manažer", "manažerka", "vedoucí", "nadřízený", "nadřízená"},
		"employer": {"zaměstnavatel"},
		"car":      {"auto"},
		"name":     {"jméno"},
		"surname":  {"příjmení"},
		"timezone": {"časové pásmo"},
	}),
	langGerman: keysOf(map[string][]string{
		"phone":    {"telefonnummer", "handynummer", "nummer", "handy", "telefon", "mobilnummer"},
		"email":    {"e-mail", "email", "e-mail-adresse", "emailadresse", "mailadresse", "mail"},
		"address":  {"adresse"},
		"manager":  {"chef", "chefin", "vorgesetzter", "vorgesetzte", "manager", "managerin", "teamleiter", "teamleiterin"},
		"employer": {"arbeitgeber", "firma"},
		"car":      {"auto", "wagen"},
		"name":     {"name", "vorname"},
		"surname":  {"nachname"},
		"timezone": {"zeitzone"},
	}),
	langChinese: keysOf(map[string][]string{
		"phone":    {"电话", "电话号码", "手机", "手机号", "手机号码", "号码"},
		"email":    {"邮箱", "电子邮件", "电子邮箱", "邮件地址", "电邮", "email", "e-mail"},
		"address":  {"地址", "住址"},
		"manager":  {"经理", "老板", "上司", "领导"},
		"employer": {"公司", "雇主"},
		"car":      {"车"},
		"name":     {"名字"},
	}),
	langJapanese: keysOf(map[string][]string{
		"phone":    {"電話番号", "携帯番号", "番号", "携帯"},
		"email":    {"メール", "メールアドレス", "アドレス", "email"},
		"address":  {"住所"},
		"manager":  {"上司", "マネージャー", "ボス"},
		"employer": {"会社"},
		"car":      {"車"},
		"name":     {"名前"},
	}),
	langKorean: keysOf(map[string][]string{
		"phone":    {"전화번호", "핸드폰 번호", "휴대폰 번호", "번호", "핸드폰", "휴대폰"},
		"email":    {"이메일", "메일", "이메일 주소"},
		"address":  {"주소"},
		"manager":  {"매니저", "매니저님", "상사", "팀장", "팀장님", "부장님", "과장님", "실장님"},
		"employer": {"회사"},
		"car":      {"차"},
		"name":     {"이름"},
	}),
}

func keysOf(byKey map[string][]string) map[string]string {
	m := map[string]string{}
	for key, words := range byKey {
		for _, w := range words {
			m[w] = key
		}
	}
	return m
}

var (
	// blockedKeys are attributes "my X is Y" does not replace: a second
	// plan or problem adds to the first, and home or age have their own
	// statements.
	blockedKeys = setOf(
		"home", "age", "house", "flat", "apartment", "plan", "plans", "goal", "guess", "idea", "point",
		"problem", "question", "concern", "dream", "wish", "hope", "fear", "worry", "opinion", "answer",
		"bet", "hobby", "favourite", "favorite", "fave", "fav", "preference", "job", "work", "life", "day",
		"week", "weekend", "situation", "health", "mood", "schedule",
		"domov", "věk", "plán", "cíl", "názor", "problém", "otázka", "sen", "přání", "koníček", "práce", "život",
		"zuhause", "alter", "ziel", "meinung", "frage", "traum", "wunsch", "arbeit", "leben",
		"家", "年龄", "计划", "目标", "问题", "梦想", "爱好", "意见", "工作",
		"年齢", "計画", "目標", "問題", "夢", "趣味", "仕事",
		"집", "나이", "계획", "목표", "문제", "꿈", "취미", "의견", "일",
	)
	// bareKeys take lower-case values: "my name is anna", "my timezone is cet".
	bareKeys = setOf(
		"name", "surname", "nickname", "timezone", "blood type", "star sign", "zodiac sign", "pronouns",
		"diet", "job title", "title", "role", "username", "handle", "native language", "mother tongue",
		"first language", "přezdívka", "krevní skupina", "znamení", "spitzname", "blutgruppe", "sternzeichen",
	)
	britishSpelling = strings.NewReplacer("color", "colour", "favorite", "favourite", "flavor", "flavour")
)

type valueClassWord struct {
	word, class string
	suffix      bool // German compounds: Pfefferminztee is a tea
}

// Classes of preferences that replace each other although their words
// differ: tea and coffee.
var (
	latinClasses = map[slotLang][]valueClassWord{
		langEnglish: classWords("drink", false, "tea", "coffee", "espresso", "latte", "cappuccino", "cocoa",
			"chai", "matcha", "water", "juice", "beer", "wine", "milk", "decaf", "soda", "cola", "smoothie").
			with("indentation", false, "tabs", "tab", "spaces"),
		// Czech entries are stems: "kávu" and "čaji" are declined.
		langCzech: classWords("drink", false, "čaj", "káv", "kafe", "kafí", "kakao", "džus", "piv", "vín",
			"mlék", "espres", "latté", "latte", "cappuccin", "kapučín", "vod", "limonád").
			with("indentation", false, "tabulátor", "mezer"),
		langGerman: classWords("drink", true, "tee", "kaffee", "wasser", "saft", "bier").
			with("drink", false, "espresso", "kakao", "wein", "rotwein", "weißwein", "milch", "latte",
				"cappuccino", "matcha", "cola").
			with("indentation", false, "tabs", "leerzeichen"),
	}
	cjkClasses = map[slotLang][]valueClassWord{
		langChinese: classWords("drink", false, "茶", "咖啡", "果汁", "啤酒", "葡萄酒", "红酒", "牛奶", "可乐", "拿铁").
			with("indentation", false, "制表符", "空格"),
		langJapanese: classWords("drink", false, "茶", "コーヒー", "珈琲", "ジュース", "ビール", "ワイン", "牛乳", "ミルク", "ラテ").
			with("indentation", false, "タブ", "スペース"),
		// Korean values must equal an entry: 차 is tea, 자동차 a car.
		langKorean: classWords("drink", false, "차", "녹차", "홍차", "보리차", "커피", "주스", "맥주", "와인", "우유",
			"라떼", "아메리카노").with("indentation", false, "탭", "스페이스", "공백"),
	}
)

type classList []valueClassWord

func classWords(class string, suffix bool, words ...string) classList {
	return classList{}.with(class, suffix, words...)
}

func (l classList) with(class string, suffix bool, words ...string) classList {
	for _, w := range words {
		l = append(l, valueClassWord{word: w, class: class, suffix: suffix})
	}
	return l
}

var (
	leadingFillers = setOf(
		"remember that", "remember", "note that", "please note that", "please note", "fyi", "btw",
		"by the way", "just so you know", "update", "correction", "ok", "okay", "oh", "well", "so", "hey",
		"mimochodem", "zapamatuj si že", "zapamatuj si", "pro info", "oprava",
		"übrigens", "merk dir", "zur info", "korrektur", "참고로", "그런데",
	)
	presentMarkers = setOf(
		"now", "nowadays", "these days", "currently", "at the moment", "right now", "at present",
		"presently", "as of now", "by now", "just", "recently", "finally", "actually", "still", "already",
		"officially",
		"teď", "ted", "nyní", "už", "uz", "momentálně", "aktuálně", "nově", "nedávno", "v současnosti",
		"v současné době", "vlastně", "konečně", "právě",
		"jetzt", "inzwischen", "mittlerweile", "nun", "derzeit", "aktuell", "momentan", "zurzeit",
		"zur zeit", "im moment", "seit kurzem", "neuerdings", "gerade", "eigentlich", "endlich", "schon",
		"지금은", "지금", "이제는", "이제", "요즘은", "요즘", "현재", "현재는", "벌써", "이미", "최근에",
	)
)

// blockedWords and blockedSubstrings turn a statement into something other
// than a current fact: a negation, the past, an addition, a plan, a guess.
var (
	blockedWords = map[slotLang]map[string]bool{
		langEnglish: setOf(
			"not", "never", "no", "nor", "neither", "anymore", "longer", "also", "too", "another", "maybe",
			"perhaps", "probably", "might", "may", "would", "could", "should", "will", "shall", "going",
			"gonna", "plan", "plans", "planning", "want", "wants", "hope", "hoping", "if", "soon", "next",
			"ago", "until", "till", "formerly", "previously", "once", "earlier", "used", "past", "then",
			"dont", "doesnt", "isnt", "cant", "wont", "didnt", "wasnt", "arent", "think", "guess", "both",
		),
		langCzech: setOf(
			"ne", "nikdy", "nejsem", "není", "nemám", "také", "taky", "též", "i", "možná", "asi", "snad",
			"pravděpodobně", "kdyby", "jestli", "pokud", "budu", "bude", "budeme", "brzy", "chci", "chtěl",
			"chtěla", "plánuju", "plánuji", "dřív", "dříve", "kdysi", "předtím", "tehdy", "původně", "zatím",
			"ještě", "myslím",
		),
		langGerman: setOf(
			"nicht", "nie", "niemals", "kein", "keine", "keinen", "keinem", "keiner", "auch", "noch",
			"zusätzlich", "ebenfalls", "vielleicht", "wahrscheinlich", "wohl", "wenn", "falls", "werde",
			"wird", "werden", "bald", "plane", "will", "möchte", "früher", "damals", "ehemals", "vorher",
			"bisher", "bis", "ursprünglich", "einst", "nächsten", "nächste", "glaube",
		),
		langKorean: setOf("안", "못", "또", "그리고", "아마", "예전에", "옛날에", "원래", "전에는", "다음", "내년", "만약", "아직"),
	}
	blockedSubstrings = map[slotLang][]string{
		// Single characters only where no name needs them: 也 is in 维也纳,
		// 会 in 会展中心; the patterns already refuse 我也住在 and 我会搬到.
		// 别 is in 霸王别姬 and 别克: chineseDont finds it as a "don't".
		langChinese: {
			"不", "没", "未", "另外", "可能", "也许", "大概", "如果", "打算", "将要", "准备", "计划",
			"以前", "之前", "过去", "曾经", "原来", "小时候", "当时", "什么", "哪", "谁", "多少",
		},
		langJapanese: {
			"ない", "ません", "かも", "たぶん", "多分", "予定", "つもり", "もし", "以前", "昔", "かつて", "当時",
			"元々", "もともと", "まだ", "来月", "来年", "子供の頃", "でした", "だった",
		},
		langKorean: {"않", "없", "아니", "예전", "옛날", "어렸을", "것 같", "예정", "거예요", "계획", "당시", "살았"},
	}
)

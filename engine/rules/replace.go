package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A fact often changes in words that name what it was: "Sold the Corvano
// and got a Hallis EV", "Z Modrého Mlýna jsem odešla, od září jsem v
// Teraxu", "高梨さんが異動になって、新しい上司は森本さんになりました",
// "강철짐은 끊었고 이제 필라테스 다녀요". No slot rule reads those, but two
// things together say the older memory probably no longer holds: the new
// text names it (a word of it that is a name or a thing, not a function
// word), and it says that something ended or changed (a closed class of
// verbs and adverbs in each language: sold, quit, left, died, switched, no
// longer …). The older memory must be about the same person: a relative,
// a friend or a colleague named in one text and not the other makes them
// two people's facts ("My brother still goes fishing" stays when "I gave
// up fishing"). Recall uses this, through Statement, to rank the newer
// memory first (retrieve.Outdated); nothing is superseded on it, since it
// is a guess.

// tellsChange reports whether text tells that something ended or
// changed, the first half of Replaces; a Statement reads it once.
func tellsChange(text string) bool {
	n := strings.ToLower(text)
	return len(text) <= maxFactBytes && hasChangeCue(n) && !containsAny(n, notChangeCues)
}

// Replaces reports whether newText, a change told in free words, ends
// oldText, by the rules alone (Statement.ReplacesBy adds the model).
func Replaces(newText, oldText string) bool {
	if !tellsChange(newText) || len(oldText) > maxFactBytes || newText == oldText {
		return false
	}
	n, o := strings.ToLower(newText), strings.ToLower(oldText)
	return replacesTold(n, o, oldText, relationOf(n), relationOf(o), func() (slotFact, bool) { return parseSlotFact(oldText) })
}

// replacesTold is Replaces for a newer text that tells a change, on the
// lower-cased texts n and o (o's original oldOrig), their relations, and
// o's slot, parsed only if asked.
func replacesTold(n, o, oldOrig, nRel, oRel string, oldSlot func() (slotFact, bool)) bool {
	if nRel != oRel {
		return false
	}
	if namesValueOf(n, o, oldOrig) {
		return true
	}
	// A move, a new job or a new number needs no name of the old one:
	// the slot the old text states is enough, if it is the speaker's.
	if f, ok := oldSlot(); ok && f.Subject == "i" {
		for _, c := range slotCues[f.Key] {
			if strings.Contains(n, c) {
				return true
			}
		}
	}
	return false
}

// slotCues say that a slot of the speaker's changed, whatever it was.
var slotCues = map[string][]string{
	"home": {"moved to", "moved into", "we moved", "i moved", "relocated", "umgezogen", "seit dem umzug", "nach dem umzug",
		"přestěhoval", "odstěhoval", "搬到", "搬家", "引っ越", "이사"},
	"employer": {"new job", "started at", "joined ", "neuen job", "neue stelle", "angefangen bei", "nastoupil", "novou práci",
		"跳槽", "入职", "转职", "入社", "転職", "이직", "입사"},
	"phone": {"new number", "changed my number", "neue nummer", "nové číslo", "新号码", "换号", "号码换", "手机号换", "番号を変え",
		"新しい番号", "번호 바꿨", "새 번호"},
	"email": {"new email", "new address", "neue adresse", "neue e-mail", "nový e-mail", "新邮箱", "邮箱换", "メアドを変え",
		"メールアドレスを変え", "새 메일", "메일 주소 바꿨"},
}

// notChangeCues mark news of the day or plans, not a changed fact: "the
// ferry was cancelled today", "Tesla stock dropped today", "he will be
// promoted next month".
var notChangeCues = []string{"today", "tonight", "this morning", "next week", "next month", "next year", "will ", "going to",
	"heute", "morgen ", "nächste", "dnes", "zítra", "příští", "今天", "明天", "下周", "下个月", "明年", "今日", "明日", "来週", "来月",
	"来年", "오늘", "내일", "다음 주", "다음 달", "내년", "할 거", "할거", "예정"}

// changeCues end or replace a fact. Matched as substrings of the
// lower-cased text: CJK words have no spaces, and the Latin ones are
// stems ("verkauf" for verkauft, verkaufte).
var changeCues = []string{
	// English
	"sold ", "sold the", "quit ", "left ", "no longer", "not anymore", "anymore", "any more", "gave up", "given up", "switched",
	"replaced", "upgraded", "passed away", "died", "cancelled", "canceled", "moved ", "instead",
	"from now on", "changed", "stopped", "retired", "broke up", "divorced", "traded in", "got rid of",
	// German
	"verkauf", "gekündigt", "aufgegeben", "aufgehört", "nicht mehr", "kein mehr", "gewechselt", "gestorben", "umgezogen",
	"stattdessen", "seit dem umzug", "bin ich raus", "ersetzt",
	// Czech
	"prodal", "odešl", "odeše", "už ne", "už nebydl", "už nechod", "už nem", "už nepracuj", "umřel", "zemřel", "změnil", "vyměnil", "přestal", "skončil", "nahradil", "pověsil na hřebík", "místo toho",
	// Chinese
	"卖了", "辞职", "离职", "不再", "不干了", "走了", "去世", "换了", "换成", "改成", "改去", "改为", "搬到", "搬家",
	"放弃", "戒了", "不去了", "分手", "停了",
	// Japanese
	"手放", "売った", "売りました", "辞め", "やめ", "退職", "亡くな", "死んで", "変えました", "変えた", "機種変", "引っ越", "異動",
	"乗り換え", "卒業", "別れ",
	// Korean
	"팔고", "팔았", "그만두", "끊었", "퇴사", "떠났", "죽었", "무지개다리", "바꿨", "바꾸", "이사",
	"새로", "대신", "헤어졌",
}

func hasChangeCue(lower string) bool {
	if containsAny(lower, changeCues) {
		return true
	}
	// "Now", alone, is in every kind of sentence; with a comparison or a
	// verb of having or using it tells a replacement: "jetzt hab ich ein
	// Nuvio Pro", "最近はラーメンより断然カレー派", "요즘은 아메리카노보다 라떼".
	return containsAny(lower, nowCues) && (containsAny(lower, compareCues) || containsAny(lower, useCues))
}

var (
	nowCues = []string{"these days", "nowadays", " now", "jetzt", "inzwischen", "mittlerweile", "teď", "nově", "现在", "如今",
		"最近", "今は", "いまは", "이제", "요즘", "지금은"}
	compareCues = []string{" than ", "rather", "instead", " als ", "lieber", " než", "radši", "比", "更", "より", "보다", "더 "}
	useCues     = []string{" new ", "neue", "nový", "novou", "新", " 새 ", " have ", " use ", " drive ", " using ", "hab ich", "habe ich", "fahre", "nutze", " mám ", "používám", "jezdím",
		"用的", "开的", "使って", "乗って", "써요", "타요", "써", "타고"}
)

// relationWords name someone other than the speaker whose facts a text
// may give. relationOf returns the first one a text names ("" for none).
var relationWords = []string{
	"wife", "husband", "partner", "girlfriend", "boyfriend", "brother", "sister", "mother", "father", "mom", "mum", "dad",
	"son", "daughter", "friend", "colleague", "neighbour", "neighbor", "grandma", "grandpa", "aunt", "uncle", "cousin",
	"frau", "mann ", "freundin", "freund", "bruder", "schwester", "mutter", "vater", "sohn", "tochter", "kollege", "kollegin",
	"nachbar", "oma", "opa",
	"manžel", "manželk", "přítel", "přítelkyn", "bratr", "sestr", "maminka", "táta", "otec", "syn", "dcer", "kamarád",
	"kolega", "kolegyn", "soused", "babička", "děda",
	"妻子", "老婆", "老公", "丈夫", "男朋友", "女朋友", "哥哥", "姐姐", "弟弟", "妹妹", "妈妈", "爸爸", "儿子", "女儿", "朋友", "同事", "邻居",
	"妻", "夫", "主人", "彼氏", "彼女", "兄", "姉", "弟", "妹", "母", "父", "息子", "娘", "友達", "友人", "同僚",
	"아내", "남편", "와이프", "남친", "여친", "형", "오빠", "누나", "언니", "동생", "엄마", "아빠", "어머니", "아버지", "아들", "딸", "친구",
	"동료", "이웃",
	"assistant", "brácha", "ségra", "爸", "妈", "哥", "姐",
	// Children, parents, housemates, in-laws, teams: every language.
	"kid", "child", "children", "parents", "grandparent", "in-law", "roommate", "flatmate", "housemate", "teammate", "boss's",
	"manager's", "kind ", "kinder", "eltern", "schwieger", "mitbewohner", "chef", "chefin", "dítě", "děti", "rodiče", "tchán",
	"tchyn", "spolubydlící", "šéf", "孩子", "父母", "公婆", "岳父", "岳母", "室友", "老板", "子供", "子ども", "両親", "義理",
	"ルームメイト", "上司の", "아이", "애들", "부모님", "시어머니", "장모", "룸메이트", "사장님",
	// A second one of a kind is another thing: "my second car".
	"second ", "other ", "another ", "zweite", "andere", "druh", "另一", "第二", "もう一", "2台目", "두 번째", "다른 ",
	// What belongs to work, not to the speaker: a second phone, a
	// company's number.
	"work phone", "work email", "work number", "office phone", "company phone", "dienst", "firmen", "služební", "firemní",
	"公司", "工作用", "备用", "会社の", "仕事用", "회사", "업무용",
}

func relationOf(lower string) string {
	for _, w := range relationWords {
		for at := 0; ; {
			k := strings.Index(lower[at:], w)
			if k < 0 {
				break
			}
			k += at
			// A Latin word starts a word: "doma" holds no "oma".
			if r, _ := utf8.DecodeRuneInString(w); r >= 0x2E80 || k == 0 || !unicode.IsLetter(lastRuneBefore(lower, k)) {
				return w
			}
			at = k + len(w)
		}
	}
	return ""
}

func lastRuneBefore(s string, i int) rune {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}

// namesValueOf: the new text names a word of the old one that is a name
// or a thing: a Latin word of five letters or more other than a function
// or change word, compared by its first five letters (Czech and German
// inflect: "Modrý Mlýn", "Modrého Mlýna"); or two Han, kana or Hangul
// characters in a row, outside the function words of those scripts.
func namesValueOf(n, o, oldOrig string) bool {
	capital := capitalised(oldOrig)
	for _, w := range strings.FieldsFunc(o, notWordRune) {
		if isCJKWord(w) {
			continue
		}
		// A name ("Greg", "Mlýn") is compared by its first four letters,
		// which inflection leaves ("Mlýna"); a lower-case word needs five
		// letters, compared whole.
		size := utf8.RuneCountInString(w)
		if commonWord(w) {
			continue
		}
		if capital[w] {
			if size >= 4 && strings.Contains(n, string([]rune(w)[:4])) {
				return true
			}
			continue
		}
		if size >= 5 && strings.Contains(n, string([]rune(w)[:5])) {
			return true
		}
	}
	// CJK: every run of two characters of the old text.
	or := []rune(o)
	for i := 0; i+1 < len(or); i++ {
		a, b := or[i], or[i+1]
		if !cjkContent(a) || !cjkContent(b) {
			continue
		}
		pair := string(or[i : i+2])
		if cjkCommon[pair] || strings.ContainsAny(pair, cjkFunction) {
			continue
		}
		if strings.Contains(n, pair) {
			return true
		}
	}
	return false
}

func isCJKWord(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return r >= 0x2E80
}

// cjkContent: a character that can be part of a name or a thing: Han,
// katakana, Hangul; hiragana are mostly particles and endings.
func cjkContent(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// cjkFunction are Chinese characters of grammar, not of names.
const cjkFunction = "的是了在我你他她们有和也都就还又用个一不这那"

// cjkCommon are two-character words of every kind of sentence.
var cjkCommon = map[string]bool{
	"我们": true, "现在": true, "以前": true, "一直": true, "时候": true, "今年": true, "去年": true, "工作": true, "喜欢": true,
	"自分": true, "最近": true, "仕事": true, "会社": true, "毎日": true,
	"저는": true, "제가": true, "우리": true, "요즘": true, "지금": true, "이제": true, "회사": true, "매일": true, "좋아": true,
	"해요": true, "있어": true, "다녀": true, "이에": true, "예요": true, "에요": true, "했어": true, "니다": true, "습니": true,
}

// commonWords are Latin words of five letters or more that say nothing of
// what a fact is about, and the change cues' words.
var commonWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`about after again always being could every first found going great since still their there
		these thing think those today using where which while would years months weeks really pretty little other
		working living drive drives driving place company older newer
		nicht immer schon jetzt heute wieder meine meinen meiner unser unsere unseren haben habe seit einem einen einer
		arbeite wohne fahre gehen gehe
		jsem jsme není mám máme bydlím pracuju pracuji chodím jezdím teď protože`) {
		m[w] = true
	}
	// The change cues' own words, which both texts of a change may share
	// without naming anything.
	for _, c := range changeCues {
		m[strings.TrimSpace(c)] = true
	}
	return m
}()

func commonWord(w string) bool { return commonWords[w] }

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// capitalised maps each word of orig, lower-cased, to whether it stands
// capitalised where it first occurs after the first word: a name
// ("Ironleaf", "Tomáš").
func capitalised(orig string) map[string]bool {
	words := strings.FieldsFunc(orig, notWordRune)
	m := make(map[string]bool, len(words))
	for _, x := range words[min(1, len(words)):] {
		if w := strings.ToLower(x); !hasKey(m, w) {
			r, _ := utf8.DecodeRuneInString(x)
			m[w] = unicode.IsUpper(r)
		}
	}
	return m
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}

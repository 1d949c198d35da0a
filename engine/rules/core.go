package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A core fact is what the assistant should know in every turn, whatever
// the user asks: who they are (their name), which languages they speak or
// want answers in, and standing instructions to the assistant ("answer in
// British English", "always call me Sam", "never use emojis"). Auto-recall
// puts a few of them at the head of every block.

// maxCoreBytes bounds a core fact: identity and standing instructions are
// one short sentence; a longer text that mentions a name says more.
const maxCoreBytes = 200

// coreSlotKeys are the FactSlot attributes of the speaker that make a
// statement a core fact.
var coreSlotKeys = setOf("name", "surname", "nickname", "pronouns", "native language", "mother tongue", "first language")

// coreAnywhere are identity phrases of the six languages; a Latin-script
// one must start a word.
var coreAnywhere = []string{
	"my name is", "i'm called", "i am called", "my mother tongue", "my pronouns are",
	"jmenuji se", "jmenuju se", "moje jméno je", "můj rodný jazyk", "moje mateřština",
	"ich heiße", "ich heisse", "mein name ist", "meine muttersprache",
	"我叫", "我的名字", "我的母语", "请叫我",
	"私の名前は", "と申します", "と呼んで", "母語は", "母国語は",
	"제 이름은", "내 이름은", "제 모국어는", "라고 불러",
}

// coreLeading are standing instructions to the assistant; they start the
// text, after an optional "please" or "always" (coreLeadingFillers).
var coreLeading = []string{
	"answer in ", "answer me in ", "reply in ", "respond in ", "write in ", "talk to me in ", "answer only in ",
	"use british ", "use american ", "never use ", "don't use ", "do not use ", "never call me ", "address me as ",
	"odpovídej ", "odpovídejte ", "odpověz ", "piš mi ", "nepoužívej ", "nepoužívejte ", "oslovuj mě ", "říkej mi ",
	"antworte ", "antworten sie ", "schreib mir ", "schreiben sie mir ", "nenn mich ", "nenne mich ",
	"verwende nie ", "verwende keine ", "benutze nie ", "benutze keine ", "sprich mit mir ", "duze mich", "sieze mich",
	"用中文", "用英文", "用英语", "用简体", "用繁体", "不要用", "别用", "回答时",
}

var coreLeadingFillers = []string{"please ", "always ", "prosím ", "vždy ", "vždycky ", "bitte ", "immer ", "请", "总是", "一直"}

// coreAnywhereCJK are instructions that end a CJK sentence ("…で答えてください").
var coreAnywhereCJK = []string{
	"で答えて", "で返事して", "で話して", "で書いて", "を使わないで",
	"로 대답해", "으로 대답해", "로 답해", "으로 답해", "쓰지 마", "사용하지 마",
	"回答我", "回复我",
}

// coreSpeaks and coreLanguages make "I speak German and Czech": a verb of
// speaking and a language's name.
var (
	coreSpeaks    = []string{"i speak ", "i'm fluent in ", "mluvím ", "ich spreche ", "我会说", "を話します", "を話せます", "할 줄 알아"}
	coreLanguages = []string{"english", "czech", "german", "french", "spanish", "italian", "polish", "russian", "chinese",
		"japanese", "korean", "portuguese", "dutch", "česky", "čeština", "anglicky", "německy", "deutsch", "englisch",
		"tschechisch", "französisch", "spanisch", "中文", "汉语", "英语", "日语", "韩语", "德语", "捷克语", "日本語",
		"英語", "中国語", "ドイツ語", "韓国語", "チェコ語", "한국어", "영어", "중국어", "일본어", "독일어", "체코어"}
)

// IsCore reports whether a memory's text is a core fact: the speaker's
// name, pronouns or languages (FactSlot's name and language attributes, or
// the identity phrases of the six languages), or a standing instruction
// to the assistant. Questions and long texts are not.
func IsCore(text string) bool {
	n := strings.TrimSpace(Normalize(text))
	if n == "" || len(n) > maxCoreBytes || strings.ContainsRune(n, '?') {
		return false
	}
	if s, ok := FactSlot(n); ok && s.Subject == "i" && coreSlotKeys[s.Key] {
		return true
	}
	l := strings.ToLower(n)
	for _, p := range coreAnywhere {
		if containsWordStart(l, p) {
			return true
		}
	}
	for _, p := range coreAnywhereCJK {
		if strings.Contains(l, p) {
			return true
		}
	}
	lead := l
	for _, f := range coreLeadingFillers {
		lead = strings.TrimPrefix(lead, f)
	}
	for _, p := range coreLeading {
		if strings.HasPrefix(lead, p) {
			return true
		}
	}
	if strings.HasPrefix(lead, "call me ") && len(l) == len(n) {
		return isNameAfter(n[len(n)-len(lead)+len("call me "):])
	}
	for _, v := range coreSpeaks {
		if containsWordStart(l, v) {
			for _, lang := range coreLanguages {
				if strings.Contains(l, lang) {
					return true
				}
			}
		}
	}
	return false
}

// containsWordStart reports p in s where it starts a word, or anywhere
// when p starts with a character of a script written without spaces.
func containsWordStart(s, p string) bool {
	first, _ := utf8.DecodeRuneInString(p)
	for i := 0; ; {
		j := strings.Index(s[i:], p)
		if j < 0 {
			return false
		}
		at := i + j
		if r, _ := utf8.DecodeLastRuneInString(s[:at]); at == 0 || isCJK(first) || !isLetterOrDigit(r) {
			return true
		}
		i = at + len(p)
	}
}

// isNameAfter reports whether "call me" is followed by a name: one or two
// capitalised words and nothing else ("Call me Sam", not "call me tomorrow").
func isNameAfter(rest string) bool {
	words := strings.Fields(strings.TrimRight(rest, ".!,; "))
	if len(words) == 0 || len(words) > 2 {
		return false
	}
	for _, w := range words {
		if r, _ := utf8.DecodeRuneInString(w); !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

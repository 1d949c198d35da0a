package rules

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Prompt injection by meaning. An override needs three kinds of word close
// together: a verb that sets something aside, what it sets aside, and a word
// that makes that the agent's own instructions rather than a shampoo
// bottle's. "Ignore all previous instructions", "Olvida todas las reglas
// anteriores", "Bitte alle bisherigen Anweisungen ignorieren" and "以前の指示を
// 無視" are one rule, in any order and with a few words between; "ignore the
// noise in the logs" and "forget about the Berlin trip" lack an object, and
// "ignore the instructions on the bottle" lacks a qualifier. Words are read
// after folding leetspeak ("ign0re") and Latin look-alikes from other
// scripts, and letters spaced apart ("i g n o r e") are read as one word.

// wclass is what a word can do in an override.
type wclass uint16

const (
	wOverride  wclass = 1 << iota // sets instructions aside: ignore, vergiss, olvida
	wFollow                       // follows them; an override only when negated
	wNegation                     // not, nicht, ne, no
	wObject                       // instructions, rules, prompt, Anweisungen
	wGeneric                      // everything, alles, todo: an object only with a strong qualifier
	wQualifier                    // all, previous, your, system: makes the object the agent's
	wStrong                       // previous, above, earlier: qualifies even "everything"
	wSubject                      // I, we, they: a statement, not an imperative
	wRole                         // system, developer, admin: whose instructions
	wWeak                         // erase, reset, void: sets aside only what is plainly the agent's
	wAgent                        // your, system, initial: plainly the agent's
	wMine                         // my, our: the user's own instructions, theirs to revoke
	wNew                          // new, updated: announces orders
	wAct                          // reveal, send, disable: what announced orders ask for
)

// Words by class, all languages together: a word means the same in each
// place it can occur. A trailing "*" makes a prefix.
var injectionClasses = []struct {
	class wclass
	words []string
}{
	{wOverride, []string{
		// English; "ignor*" also covers ignoriere, ignorez, ignora, ignoruj.
		"ignor*", "disregard*", "forget", "forgetting", "overrid*", "overrule*", "bypass*", "circumvent*",
		"disobey*", "skip", "discard", "dismiss", "abandon", "overlook", "neglect", "nullify", "unlearn",
		"scrap", "ditch", "suspend", "revoke", "void", "aside",
		// German
		"vergiss", "vergesst", "vergessen", "vergesse", "missacht*", "übergeh*", "überspring*", "umgeh*",
		"verwirf", "verwerft", "verwerfen", "hinwegsetzen", "aufheben",
		// French
		"oublie", "oubliez", "oublier", "oublies", "néglige*", "contourne*", "outrepasse*", "abstraction", "écarte", "écartez",
		// Spanish
		"olvid*", "omit*", "descarta*", "descarte", "omiso", "sáltate", "saltate", "salta", "elude", "evita",
		// Czech
		"zapomeň*", "zapomen*", "nevšímej*", "přeskoč*", "obejdi", "obejděte", "obejít", "zahoď*", "zruš", "zrušte",
		"neřiď*", "neposlouchej*", "nedodržuj*", "neber",
	}},
	{wFollow, []string{
		"follow*", "obey*", "heed", "respect", "observe", "listen", "adhere", "comply", "attention",
		"befolg*", "folge", "folgt", "gehorch*", "beachte", "beachten", "halte",
		"suis", "suivez", "suivre", "respecte", "respectez", "obéis", "obéissez", "compte",
		"sigas", "siga", "sigan", "seguir", "sigue", "obedezcas", "obedezca", "obedecer", "respetes", "respetar",
		"řiď", "řiďte", "dodržuj", "dodržujte", "poslouchej", "poslouchejte", "poslechni",
	}},
	{wNegation, []string{
		"not", "don't", "dont", "never", "no", "stop", "quit", "cease", "longer",
		"nicht", "nie", "keine", "kein", "ne", "n", "pas", "plus", "nunca", "jamás", "deja", "dejes",
		"přestaň", "nikdy",
	}},
	{wObject, []string{
		"instruction*", "rule", "rules", "prompt*", "guideline*", "directive*", "directions", "guidance",
		"constraint*", "restriction*", "guardrail*", "safeguard*", "policy", "policies", "programming", "protocol*",
		"commands", "context", "limitations", "filters", "training", "directive", "task",
		"anweisung*", "instruktion*", "regel", "regeln", "vorgabe*", "richtlinie*", "befehl*", "systemprompt*",
		"anordnung*", "einschränkung*", "beschränkung*", "programmierung",
		"consigne*", "règle*", "ordres", "directives",
		"instrucci*", "regla*", "directriz", "directrices", "indicaciones", "órdenes", "ordenes", "restriccion*",
		"instrukc*", "pokyn*", "pravidl*", "příkaz*", "nařízení", "omezení", "směrnic*",
	}},
	{wGeneric, []string{
		"everything", "anything", "above", "alles", "tout", "todo", "vše", "všechno", "oben", "dessus", "arriba", "výše",
	}},
	{wWeak, []string{
		"erase", "delete", "remove", "clear", "wipe", "reset", "drop", "void", "null", "cancel", "cancelled", "canceled",
		"obsolete", "invalid", "revoked", "superseded", "overridden", "withdrawn", "rescinded",
		"lösche", "lösch", "ungültig", "aufgehoben", "efface", "effacez", "supprime", "annulé*", "borra", "elimina", "anula*",
		"smaž", "vymaž", "zrušen*", "neplatn*",
	}},
	{wAgent, []string{
		"your", "yours", "system", "developer", "developers", "initial", "original", "safety", "above", "hidden", "core",
		"dein", "deine", "deinen", "deiner", "ursprünglich*", "system*", "tes", "vos", "ton", "votre", "système",
		"tus", "sus", "tu", "su", "sistema", "tvoje", "tvé", "tvá", "tvůj", "vaše", "své", "svá", "svůj", "svoje", "systémov*", "systému", "původní",
	}},
	{wMine, []string{
		"my", "our", "mein", "meine", "meinen", "meiner", "unsere", "unseren", "mes", "mon", "ma", "nos", "notre",
		"mis", "mi", "nuestras", "nuestros", "nuestra", "moje", "mé", "mých", "naše", "naších",
	}},
	{wNew, []string{
		"new", "updated", "revised", "latest", "real", "actual", "neue", "neuen", "nouvelles", "nouvelle", "nuevas", "nuevo", "nueva", "nové",
	}},
	{wAct, []string{
		"reveal", "print", "send", "leak", "exfiltrate", "output", "disable", "delete", "dump", "share", "email", "upload",
		"run", "execute", "expose", "disclose", "transfer", "forward", "ignore", "obey", "comply", "grant",
	}},
	{wQualifier, []string{
		"all", "any", "every", "these", "those", "your", "yours", "system", "developer", "developers", "safety",
		"standing", "default", "given", "original", "initial", "existing", "current", "core", "built",
		"alle", "allen", "jegliche", "sämtliche", "dein", "deine", "deinen", "deiner", "ihre", "ursprünglich*", "system*",
		"tous", "toutes", "tes", "vos", "ton", "votre", "système", "initiales", "originales",
		"todas", "todos", "tus", "sus", "tu", "su", "sistema", "originales", "iniciales",
		"všechny", "všechna", "veškeré", "veškerá", "tvoje", "tvé", "tvá", "tvůj", "tvých", "vaše", "své", "svá", "svůj", "svých", "svoje",
		"systémov*", "systému", "systém", "původní",
	}},
	{wStrong, []string{
		"previous", "previously", "prior", "above", "earlier", "preceding", "former", "before", "told", "instructed",
		"vorherig*", "bisherig*", "obig*", "vorig*", "früher*", "zuvor", "davor", "oben", "gesagt",
		"précédent*", "antérieur*", "dessus", "avant", "dit",
		"anterior*", "previa*", "previo*", "arriba", "antes", "dijeron", "dicho",
		"předchozí", "předešlé", "předešlá", "dosavadní", "výše", "předtím", "řečeno",
	}},
	{wSubject, []string{
		"i", "we", "they", "he", "she", "it", "people", "who", "i'll", "we'll", "they'll", "i'd", "we'd", "i've", "we've",
		"ich", "wir", "er", "je", "nous", "il", "elle", "ils", "yo", "nosotros", "já", "my",
	}},
	{wRole, []string{
		"system", "developer", "developers", "admin", "administrator", "operator", "creator", "creators", "openai", "anthropic",
		"entwickler", "développeur", "desarrollador", "vývojář", "vývojáře", "systém", "systému",
	}},
}

// notOverrides are words an override prefix would take but that set
// nothing aside: "ignorant", "ignored" (a report, not an order).
var notOverrides = []string{"ignorant", "ignorance", "ignored", "olvidado", "olvidada", "olvidó", "forgotten"}

// objectEndings make a German compound an object of its own ("Systemregeln",
// "Sicherheitsanweisungen"); what the compound starts with qualifies it.
var objectEndings = []string{"regeln", "anweisungen", "anweisung", "richtlinien", "vorgaben", "instruktionen", "befehle", "prompt"}

type classPrefix struct {
	p string
	c wclass
}

var (
	classExact = map[string]wclass{}
	// classPrefixes is keyed by a prefix's first prefixKeyLen bytes, so a
	// word is checked against the few prefixes it can have.
	classPrefixes = map[string][]classPrefix{}
)

func init() {
	for _, c := range injectionClasses {
		for _, w := range append(slices.Clone(c.words), foldAccents(c.words)...) {
			w = strings.ToLower(Normalize(w))
			if p, ok := strings.CutSuffix(w, "*"); ok {
				if len(p) < prefixKeyLen {
					panic("rules: injection prefix too short: " + w)
				}
				classPrefixes[p[:prefixKeyLen]] = append(classPrefixes[p[:prefixKeyLen]], classPrefix{p, c.class})
				continue
			}
			classExact[w] |= c.class
		}
	}
}

// foldAccents is words without their accents ("olvídate" → "olvidate"), for
// text typed without them or with other ones.
func foldAccents(words []string) []string {
	var out []string
	for _, w := range words {
		if f := stripAccents(w); f != w {
			out = append(out, f)
		}
	}
	return out
}

func stripAccents(w string) string {
	if !hasLatinAccent(w) {
		return w
	}
	var b strings.Builder
	// A copy goes to norm, which would otherwise hold on to the caller's
	// text and move its word list to the heap.
	for _, r := range norm.NFD.String(strings.Clone(w)) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return norm.NFC.String(b.String())
}

// hasLatinAccent reports a letter from the Latin-1 supplement or the
// Latin extended blocks, the only ones stripAccents changes.
func hasLatinAccent(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			r, _ := utf8.DecodeRuneInString(w[i:])
			if 0xC0 <= r && r <= 0x24F {
				return true
			}
		}
	}
	return false
}

// classOf is a folded word's classes, accents or not.
func classOf(w string) wclass {
	if f := stripAccents(w); f != w {
		return classOfWord(w) | classOfWord(f)
	}
	return classOfWord(w)
}

func classOfWord(w string) wclass {
	c := classExact[w]
	for _, p := range classPrefixes[indexKey(w)] {
		if strings.HasPrefix(w, p.p) {
			c |= p.c
		}
	}
	if c&wObject == 0 && hasAnySuffix(w, objectEndings) && !oneOf(w, objectEndings) {
		c |= wObject | wQualifier
	}
	if c&wOverride != 0 && oneOf(w, notOverrides) {
		c &^= wOverride
	}
	return c
}

// Distances, in words, of an override's parts.
const (
	objectSpan    = 6 // verb to object
	qualifierSpan = 2 // beyond the verb–object stretch
	negationSpan  = 3 // negation to a "follow" verb
)

// overrides reports an override in word languages; t must be folded
// (foldText).
func overrides(t *text) bool {
	var stack [wordsOnStack]wclass
	cls := stack[:0]
	verbs := wclass(0)
	for i := range t.words {
		c := classOf(t.word(i))
		cls = append(cls, c)
		verbs |= c
	}
	if verbs&(wOverride|wFollow|wWeak|wNew) == 0 {
		return false
	}
	addressed := false
	for i := range t.words {
		w := t.word(i)
		addressed = addressed || oneOf(w, secondPossessive)
		switch {
		// "what you were told", "what the system told you": the verb is a
		// strong object itself.
		case oneOf(w, toldWords) && (nearWord(t, i-3, i, secondPerson) || nearWord(t, i+1, i+2, secondPerson)):
			cls[i] |= wObject | wStrong | wAgent
		// "the system message": a message is an object when it is a role's.
		case oneOf(w, roleMessages) && i > 0 && cls[i-1]&wRole != 0:
			cls[i] |= wObject | wStrong | wAgent
		}
	}
	for i, c := range cls {
		switch {
		case c&wOverride != 0 && !negatedOrStated(t, cls, i) && objectNear(cls, i, false):
			return true
		case c&wWeak != 0 && !negatedOrStated(t, cls, i) && agentObjectNear(cls, i):
			return true
		case c&wFollow != 0 && negatedNear(cls, i) && objectNear(cls, i, true):
			return true
		case c&wNew != 0 && i+2 < len(cls) && (cls[i+1]|cls[i+2])&wObject != 0 && (verbs&wAct != 0 || addressed) &&
			!mine(cls, i, min(len(cls)-1, i+4)):
			return true
		}
	}
	return false
}

// secondPossessive makes announced orders the agent's: "in your replies".
var secondPossessive = []string{"your", "yours", "dein", "deine", "deinen", "ton", "ta", "tes", "votre", "vos", "tus", "tvoje", "tvůj", "tvé"}

// roleMessages are objects when a role names them: "the system message".
var roleMessages = []string{"message", "messages", "note", "notes", "nachricht", "mensaje", "zpráva"}

func nearWord(t *text, from, to int, set []string) bool {
	for k := max(0, from); k < min(to, len(t.words)); k++ {
		if oneOf(t.word(k), set) {
			return true
		}
	}
	return false
}

// agentObjectNear finds an object near the weak verb at i that is plainly
// the agent's ("erase your instructions", "the above rules are void").
func agentObjectNear(cls []wclass, i int) bool {
	for j := max(0, i-objectSpan); j <= min(len(cls)-1, i+objectSpan); j++ {
		if j != i && cls[j]&wObject != 0 && !mine(cls, i, j) && qualified(cls, i, j, wAgent) {
			return true
		}
	}
	return false
}

// mine: "my earlier instructions" are the user's own to revoke.
func mine(cls []wclass, i, j int) bool {
	for k := max(0, min(i, j)-qualifierSpan); k <= max(i, j); k++ {
		if cls[k]&wMine != 0 {
			return true
		}
	}
	return false
}

// toldWords, a few words after "you", say what the agent was told.
var toldWords = []string{
	"told", "instructed", "taught", "programmed", "given", "gave", "configured", "trained",
	"gesagt", "beigebracht", "aufgetragen", "vorgegeben", "dit", "appris", "ordonné", "demandé",
	"dijeron", "dijo", "dicho", "enseñaron", "ordenaron", "indicaron", "řečeno", "řekli", "naučili", "přikázali",
}

// negatedOrStated: "don't forget your rules", "vergiss nicht", "I ignore
// all the rules when I cook" are no orders to set instructions aside.
func negatedOrStated(t *text, cls []wclass, i int) bool {
	for k := max(0, i-2); k < i; k++ {
		if cls[k]&(wNegation|wSubject) != 0 && !(cls[k]&wSubject == 0 && t.word(k) == "longer") {
			return true
		}
	}
	if i+1 < len(cls) && oneOf(t.word(i+1), []string{"nicht", "not", "pas"}) {
		return true
	}
	return false
}

func negatedNear(cls []wclass, i int) bool {
	for k := max(0, i-negationSpan); k <= min(len(cls)-1, i+negationSpan+1); k++ {
		if k != i && cls[k]&wNegation != 0 {
			return true
		}
	}
	return false
}

// objectNear finds what the verb at i sets aside: an object within
// objectSpan words, qualified as the agent's. roles lets "the developer"
// stand for its instructions ("don't follow the developer").
func objectNear(cls []wclass, i int, roles bool) bool {
	for j := max(0, i-objectSpan); j <= min(len(cls)-1, i+objectSpan); j++ {
		if j == i {
			continue
		}
		c := cls[j]
		switch {
		case roles && c&wRole != 0:
			return true
		case c&(wObject|wGeneric) != 0 && mine(cls, i, j):
		case c&wObject != 0 && c&(wStrong|wQualifier) != 0:
			return true
		case c&wObject != 0 && qualified(cls, i, j, wQualifier|wStrong):
			return true
		case c&wGeneric != 0 && (c&wStrong != 0 || qualified(cls, i, j, wStrong)):
			return true
		}
	}
	return false
}

func qualified(cls []wclass, i, j int, want wclass) bool {
	lo, hi := max(0, min(i, j)-qualifierSpan), min(len(cls)-1, max(i, j)+qualifierSpan)
	for k := lo; k <= hi; k++ {
		if k != i && k != j && cls[k]&want != 0 {
			return true
		}
	}
	return false
}

// secondPerson addresses the agent.
var secondPerson = []string{
	"you", "you're", "youre", "your", "yours", "you've", "you'll", "u", "du", "dich", "dir", "dein", "deine",
	"tu", "toi", "te", "vous", "tú", "usted", "eres", "ty", "tobě", "tebe", "jsi", "你", "あなた", "너", "당신",
}

// Override verbs, objects and qualifiers in scripts without spaces, matched
// as substrings within cjkSpan bytes of each other. A verb right after a
// negation ("不要忘记", "無視しないで") is no override.
var (
	cjkOverrides = []string{
		"忽略", "忽视", "无视", "無視", "忘记", "忘掉", "忘了", "不要理会", "别理会", "别管", "不用管", "绕过", "跳过",
		"推翻", "抛开", "抛弃", "放弃", "不要遵守", "不要遵循", "不再遵守", "别遵守", "停止遵守", "不必遵守",
		"忘れて", "忘れろ", "忘れなさい", "従わない", "従うな", "従わず", "破棄", "捨てて", "守らなくて",
		"무시", "잊어", "잊고", "잊으", "따르지 마", "따르지 말", "따르지 않", "우회", "버려", "버리고",
	}
	cjkNegations = []string{"不要", "别", "不", "没", "勿", "千万别", "不能", "不会"}
	// cjkFollows are overrides when negated: "不要再遵守", "従わないで",
	// "따르지 마".
	cjkFollows        = []string{"遵守", "遵循", "服从", "听从", "従", "따르"}
	cjkNegatedBefore  = []string{"不要", "别", "不再", "勿", "停止", "不用", "不必"}
	cjkNegatedAfter   = []string{"わない", "うな", "わず", "지 마", "지 말", "지 않"}
	cjkVoids          = []string{"无效", "失效", "作废", "無効", "무효"}
	cjkAgentQualifier = []string{"你的", "您的", "系统", "あなたの", "君の", "システム", "너의", "당신의", "시스템"}
	// cjkPretends near a role: "假装系统说过", "システムが言ったふりをして".
	cjkPretends = []string{"假装", "ふりをして", "ふりして", "척해", "척하"}
	cjkRoles    = []string{"系统", "系統", "システム", "시스템", "开发者", "開発者", "개발자", "管理员", "管理者", "관리자"}
	cjkNotAfter = []string{"しない", "するな", "しな", "하지 마", "하지 말", "하지 않", "하면 안"}
	cjkObjects  = []string{
		"指令", "指示", "规则", "規則", "规定", "提示词", "提示", "设定", "設定", "约束", "限制", "命令",
		"ルール", "プロンプト", "制約", "制限", "지시", "지침", "규칙", "명령", "프롬프트", "설정", "제한", "제약",
	}
	cjkQualifiers = []string{
		"之前", "以前", "先前", "此前", "上面", "以上", "上述", "所有", "全部", "一切", "原来", "原有", "原先", "系统", "你的", "您的", "前面",
		"前の", "上記", "これまで", "すべて", "全て", "今まで", "あなたの", "君の", "システム",
		"이전", "모든", "위의", "기존", "시스템", "너의", "네 ", "당신의", "지금까지", "앞의", "앞서",
	}
)

// cjkSpan bounds, in bytes, how far apart an override's parts may be:
// about fifteen Han, kana or Hangul characters.
const cjkSpan = 45

func overridesCJK(t *text) bool {
	if !t.cjk {
		return false
	}
	s := t.lower
	for _, v := range cjkOverrides {
		for i := 0; ; {
			j := strings.Index(s[i:], v)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(v)
			negated := hasAnySuffix(strings.TrimRight(s[:at], " "), cjkNegations) || hasAnyPrefix(s[i:], cjkNotAfter)
			if !negated && cjkObjectNear(s, at, i, cjkQualifiers) {
				return true
			}
		}
	}
	for _, v := range cjkFollows {
		for i := 0; ; {
			j := strings.Index(s[i:], v)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(v)
			before := s[startOfRune(s, max(0, at-9)):at]
			negated := containsAny(before, cjkNegatedBefore) || hasAnyPrefix(s[i:], cjkNegatedAfter)
			if negated && cjkObjectNear(s, at, i, cjkQualifiers) {
				return true
			}
		}
	}
	for _, v := range cjkPretends {
		// What the role is pretended to have said sits between the two.
		if at := strings.Index(s, v); at >= 0 {
			lo, hi := max(0, at-2*cjkSpan), min(len(s), at+len(v)+cjkSpan)
			if containsAny(s[startOfRune(s, lo):hi], cjkRoles) {
				return true
			}
		}
	}
	for _, v := range cjkVoids {
		if at := strings.Index(s, v); at >= 0 && cjkObjectNear(s, at, at+len(v), cjkAgentQualifier) {
			return true
		}
	}
	return false
}

// cjkObjectNear reports an object and a qualifier near the verb at
// s[at:end].
func cjkObjectNear(s string, at, end int, qualifiers []string) bool {
	lo, hi := max(0, at-cjkSpan), min(len(s), end+cjkSpan)
	window := s[startOfRune(s, lo):hi]
	return containsAny(window, cjkObjects) && containsAny(window, qualifiers)
}

func startOfRune(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func hasAnySuffix(s string, xs []string) bool {
	for _, x := range xs {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, xs []string) bool {
	for _, x := range xs {
		if strings.HasPrefix(s, x) {
			return true
		}
	}
	return false
}

// leet reads digits inside a word as the letters they stand for.
var leet = map[rune]rune{'0': 'o', '3': 'e', '4': 'a', '5': 's', '7': 't', '8': 'b', '9': 'g'}

// lookalikes are Cyrillic and Greek letters that pass for Latin ones; they
// are folded only in words that also hold Latin letters.
var lookalikes = map[rune]rune{
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd',
	'ɡ': 'g', 'ο': 'o', 'α': 'a', 'ε': 'e', 'ι': 'i', 'ν': 'v', 'κ': 'k', 'τ': 't', 'ρ': 'p', 'υ': 'u',
}

// foldText is t with leetspeak and look-alike letters folded, French
// elisions split ("n'oublie" → "n oublie") and runs of three or more
// spaced single letters joined ("i g n o r e" → "ignore"); false when
// nothing changes.
func foldText(t *text) (text, bool) {
	var b strings.Builder
	changed, last := false, 0
	for i := 0; i < len(t.words); i++ {
		if j := spacedRun(t, i); j-i >= 3 {
			b.WriteString(t.lower[last:t.words[i].start])
			for k := i; k < j; k++ {
				b.WriteString(t.word(k))
			}
			last, changed, i = t.words[j-1].end, true, j-1
			continue
		}
		w := t.word(i)
		f := foldWord(w)
		if f == w {
			continue
		}
		b.WriteString(t.lower[last:t.words[i].start])
		b.WriteString(f)
		last, changed = t.words[i].end, true
	}
	if !changed {
		return text{}, false
	}
	b.WriteString(t.lower[last:])
	return prepare(b.String()), true
}

// spacedRun is the end of a run of one-letter words starting at i, each
// separated from the next by one character; a wider gap ends a word.
func spacedRun(t *text, i int) int {
	j := i
	for j < len(t.words) && utf8.RuneCountInString(t.word(j)) == 1 && (j == i || t.words[j].start-t.words[j-1].end == 1) {
		j++
	}
	return j
}

func foldWord(w string) string {
	if k := strings.IndexByte(w, '\''); k > 0 && k <= 2 && oneOf(w[:k], []string{"l", "n", "d", "j", "s", "m", "t", "c", "qu"}) {
		return w[:k] + " " + foldWord(w[k+1:])
	}
	latin, other := false, false
	for _, r := range w {
		switch {
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			latin = true
		case '0' <= r && r <= '9' || lookalikes[r] != 0:
			other = true
		}
	}
	if !latin || !other {
		return w
	}
	out := []rune(w)
	for k, r := range out {
		switch {
		case r == '1':
			// "ru1es" and "a11" read 1 as l after a vowel or an l,
			// "1gnore" and "prev1ous" as i.
			out[k] = 'i'
			if k > 0 && strings.ContainsRune("aeioul", out[k-1]) {
				out[k] = 'l'
			}
		case leet[r] != 0:
			out[k] = leet[r]
		case lookalikes[r] != 0:
			out[k] = lookalikes[r]
		}
	}
	return string(out)
}

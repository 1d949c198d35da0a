package rules

// The word lists, one variable per rule and language. Syntax: see lexicon.go.
// Lists are deliberately conservative: a missed capture costs one memory, a
// wrong one pollutes every later recall.

// Capture triggers: the message states something worth keeping.
var (
	triggersEnglish = []string{
		"remember*", "prefer*", "decided", "we decided", "will use", "we'll/i'll use",
		"my * is/are",
		"i really? like/prefer/hate/love/want/need",
		"i'd like/prefer/rather", "i would like/prefer/rather",
		"always", "never !mind", "important",
		"don't/dont forget", "do not forget", "keep/bear in mind", "make/take a note",
		"^ please/just? call me", "you can call me", "i go by",
	}
	triggersCzech = []string{
		"zapamatuj*", "preferuj*", "rozhodli jsme", "jsme se rozhodli", "rozhodl/rozhodla jsem",
		"budeme používat", "můj * je", "moje * je/jsou", "mám rád/ráda", "nesnáším",
		"vždy/vždycky", "nikdy", "důležit*", "nezapomeň*",
		"poznamenej/poznamenejte/zapiš/zapište si",
	}
	triggersGerman = []string{
		"merk/merke dir", "ich wirklich/echt/sehr/total/besonders? bevorzuge/mag/hasse/liebe",
		"bevorzuge/mag/hasse/liebe ich",
		"wir haben * entschieden/beschlossen", "mein/meine * ist/sind",
		"immer", "nie", "niemals", "wichtig*", "vergiss nicht",
		"notier/notiere dir",
	}
	triggersChinese  = []string{"记住", "偏好", "喜欢", "讨厌", "决定", "总是", "从不", "从来不", "重要", "别忘了", "记下"}
	triggersJapanese = []string{"覚えて", "好き", "嫌い", "決めた", "決めました", "いつも", "重要", "大事", "忘れないで", "苦手"}
	triggersKorean   = []string{
		"기억해", "좋아해", "좋아하", "싫어해", "싫어하",
		"결정했", "항상", "중요", "선호해", "선호합니다", "잊지 마", "잊지 말",
	}
)

const familyAndPets = "* kid/kids/child/children/son/sons/daughter/daughters/dog/dogs/cat/cats/" +
	"brother/brothers/sister/sisters/twins/grandchildren/grandkids"

// Durable personal facts: where the user lives and works, family, health,
// diet, languages, origin. Both capture triggers and facts.
var (
	lifeFactsEnglish = []string{
		"i/we live/lived in/at/near", "i/we live * in/at/near", "i/we moved/relocated to", "i've/ive/we've moved to",
		"i/we have moved to", "i/we just moved to", "i'm/im based in/near", "i am based in/near", "i'm/im/am originally from", "i come from",
		"i work at/for/as/in/from", "i was born", "i grew up",
		"i'm/im allergic/vegetarian/vegan/diabetic/coeliac/celiac/colorblind/colourblind/lactose",
		"i am allergic/vegetarian/vegan/diabetic/coeliac/celiac/colorblind/colourblind/lactose",
		"i'm/im colour/color blind", "i am colour/color blind", "allergic", "allergy", "allergies",
		"i have " + familyAndPets, "i've/ive got? " + familyAndPets,
		"i'm/im * years old", "i am * years old", "i speak",
		"i don't/dont/never/can't/cannot eat/drink", "i do not eat/drink", "hay fever",
		"my * lives/lived/works/worked in/at/for/as/near",
	}
	lifeFactsCzech = []string{
		"bydlím/bydlíme/žiju/žiji/žijeme v/ve/na/u", "bydlím/bydlíme/žiju/žiji/žijeme * v/ve/na/u",
		"přestěhoval/přestěhovala/přestěhovali jsem/jsme se do", "jsem/jsme se přestěhoval/přestěhovala/přestěhovali do",
		"pracuju/pracuji/pracujeme v/ve/na/u/jako/pro/z",
		"alergi*", "jsem vegetarián*/vegan*/alergick*/diabetik*",
		"jmenuju/jmenuji/jmenuje/jmenujou/jmenují",
		"narodil/narodila/vyrostl/vyrostla jsem", "jsem se narodil/narodila",
		"mám/máme * děti/dítě/syna/syny/dceru/dcery/psa/kočku/kocoura",
		"je mi * let", "má/mají/mám * let/roků",
		"mluvím plynně/česky/anglicky/německy/francouzsky/španělsky/italsky/rusky/polsky/slovensky/japonsky/čínsky/korejsky",
		"nejím/nepiju/nepiji", "senn* rým*",
		"můj/moje/mí/moji * bydlí/žije/žijí/bydlí/pracuje/pracují v/ve/na/u/jako/pro",
	}
	lifeFactsGerman = []string{
		"ich wohne/lebe * in/im/bei/auf", "ich bin * gezogen/umgezogen", "wir sind * gezogen/umgezogen", "nach * gezogen/umgezogen", "wir wohnen/leben * in/im/bei/auf", "ich arbeite bei/als/für/in/im",
		"allergisch", "allergie*", "ich bin * vegetarier*/veganer*/vegan/diabetiker*/laktoseintolerant/farbenblind",
		"ich bin * geboren/aufgewachsen", "ich wurde * geboren", "ich komme aus",
		"ich habe * kinder/kind/sohn/söhne/tochter/töchter/hund/hunde/katze/katzen/geschwister",
		"ich bin * jahre alt", "ich heiße/heisse", "mein/meine * heißt/heisst",
		"ich spreche * deutsch/englisch/tschechisch/französisch/spanisch/italienisch/polnisch/russisch/japanisch/chinesisch/koreanisch/fließend/fliessend",
		"ich trinke/esse * kein/keine/keinen", "heuschnupfen",
		"mein/meine * wohnt/lebt/arbeitet/wohnen/leben/arbeiten in/im/bei/als/auf",
	}
	lifeFactsChinese = []string{
		"我住在", "我现在住在", "我搬到", "我们搬到", "我搬去", "过敏", "素食", "吃素", "我不吃", "我不喝", "出生", "我会说",
		"我女儿", "我儿子", "我老婆", "我老公", "我妻子", "我丈夫", "我太太", "我妈", "我爸", "我今年",
		"公司工作", "公司上班",
	}
	lifeFactsJapanese = []string{
		"に住んで", "に引っ越し", "で働いて", "働いています", "勤めて", "仕事をしています", "アレルギー", "花粉症", "ベジタリアン", "菜食",
		"生まれ", "出身", "話せます", "飼って", "ようにしています",
		"娘は", "娘が", "息子は", "息子が", "妻は", "妻の", "夫は", "夫の", "子供が", "子どもが",
	}
	lifeFactsKorean = []string{
		"에 살아", "에 살고 있", "이사했", "이사 왔", "이사왔", "에 삽니다", "일하고 있", "일해요", "일합니다", "근무", "알레르기", "채식",
		"태어났", "출신", "할 줄 알", "키우고 있", "키워요", "안 마셔요", "안 먹어요", "못 먹어요", "기로 했",
	}
)

// "My X is" in CJK text, a capture trigger (see slot).
var (
	mySlotsChinese = []slot{
		{head: "我的", tail: "是"}, {head: "我的", tail: "叫"},
		{head: "我在", tail: "工作"}, {head: "我在", tail: "上班"},
		{head: "我有", tail: "孩子"}, {head: "我有", tail: "儿子"}, {head: "我有", tail: "女儿"},
		{head: "我有", tail: "狗"}, {head: "我有", tail: "猫"},
	}
	mySlotsJapanese = []slot{{head: "私の", tail: "は"}}
	mySlotsKorean   = []slot{
		{head: "내 ", tail: "은", wholeWord: true}, {head: "내 ", tail: "는", wholeWord: true},
		{head: "제 ", tail: "은", wholeWord: true}, {head: "제 ", tail: "는", wholeWord: true},
	}
)

// Memory commands: the user asks to change the memory itself, which the
// memory tools do on request; capturing the request would store its opposite.
var (
	memoryCommandsEnglish = []string{
		"^ please/pls/just/ok/okay/now? forget that/this/it/everything/what/about/all/my/the",
		"please forget", "forget everything", "forget what i",
		"can/could/would/will you please? forget",
		"delete/remove/erase/clear/wipe/purge/reset * memories",
		"delete/remove/erase/clear/wipe/purge/reset your/my/that/this memory",
		"delete/remove/erase/wipe/purge it/that/this from your? memory",
		"stop remembering", "don't/dont remember/store/save that/this",
		"do not remember/store/save that/this",
	}
	memoryCommandsCzech = []string{
		"zapomeň/zapomen/zapomeňte/zapomente", "smaž/smazat/vymaž/vymazat * paměť/paměti/vzpomínky/vzpomínku",
	}
	memoryCommandsGerman = []string{
		"vergiss alles", "vergiss was", "vergiss dass",
		"lösch* * erinnerung*/gedächtnis/speicher", "erinnerung*/gedächtnis löschen",
	}
	memoryCommandsChinese = []string{
		"删除记忆", "删除我的记忆", "删除所有记忆", "删掉记忆", "清除记忆", "清空记忆",
		"!不要/别/不/没/没有/不会 忘记这", "!不要/别/不/没/没有/不会 忘记那",
		"!不要/别/不/没/没有/不会 忘记我说", "!不要/别/不/没/没有/不会 忘掉",
		"!不要/别/不/没/没有/不会 忘了这", "!不要/别/不/没/没有/不会 忘了我说",
	}
	memoryCommandsJapanese = []string{
		"忘れてください", "忘れて下さい", "忘れてくれ", "忘れてほしい", "記憶を削除", "記憶を消して", "記憶を消去",
	}
	memoryCommandsKorean = []string{
		"잊어줘", "잊어 줘", "잊어주세요", "잊어 주세요", "잊어버려", "기억을 삭제", "기억 삭제", "기억을 지워", "기억 지워",
	}
)

// Prompt injection by set phrases: re-assigning the agent's role ("from now
// on you are"), announcing new instructions, pretending the system spoke,
// jailbreak modes, asking for the system prompt. Overriding instructions is
// matched by word classes (injectionwords.go); role tags, headers and forged
// framing are structural checks (injection.go).
var (
	injectionEnglish = []string{
		"from now on/onward/onwards you are", "from now on/onward/onwards you're/youre/act/pretend/behave/become",
		"from now on/onward/onwards you will/shall be/act/pretend/behave/become/obey",
		"from this point on/onward you are", "from this point on/onward you're/youre", "from this point on/onward you will/shall be/respond/obey",
		"starting now you are", "starting now you're/youre", "henceforth you",
		"you are now !able/ready/done/set/logged/connected/signed/subscribed/registered/eligible/allowed/permitted/welcome/going/at/on/up/back/home/my/our",
		"you're/youre now !able/ready/done/set/logged/connected/signed/subscribed/registered/eligible/allowed/permitted/welcome/going/at/on/up/back/home/my/our",
		"you must/will/shall/should now", "you now must/have",
		"your new/real/true/actual/updated role/name/identity/persona/instructions/rules/task/goal/purpose/objective/directive/directives/orders/prompt/programming/master/owner",
		"new system prompt", "updated system prompt",
		"this is your system/developer/developers/creator/creators/admin/administrator/operator/maker/owner",
		"developer/admin/administrator/operator/creator speaking",
		"when/whenever/once/if * agent/assistant/ai/model/llm/bot/chatbot/you read/reads/see/sees/recall/recalls/retrieve/retrieves/load/loads this",
		"as if/though you had/have/were no * restrictions/rules/limits/limitations/filters/guidelines/constraints/instructions",
		"pretend/imagine/suppose/assume that? the/your? system/developer/developers/admin/administrator/operator/creator/creators",
		"act/behave as if/though the/your? system/developer/admin/administrator/operator",
		"jailbreak*", "jailbroken", "do anything now", "dan mode", "god mode",
		"you * developer/dan/god/unrestricted mode",
		"you have/has/had no * restrictions/rules/limits/limitations/filters/guidelines/constraints/boundaries",
		"you are no longer bound/restricted/limited/constrained", "you're/youre no longer bound/restricted/limited/constrained",
		"you are not bound/restricted", "you're/youre not bound/restricted",
		"without * restrictions/filters/guardrails/censorship/safeguards/limitations",
		"reveal/print/show/repeat/output/leak/display/dump/expose/disclose/recite/tell/give/share/paste * your/system/initial/hidden/secret/original prompt*/instructions/guidelines",
		"what is/are/was/were your * prompt*/instructions/guidelines",
		"your system prompt*", "the system says/said/wants/requires",
		"system prompt* says/said/tells/told/requires/wants/reads", "developer message*", "admin/system override",
	}
	injectionGerman = []string{
		"ab jetzt/sofort bist/wirst du", "von nun an bist/wirst du", "ab jetzt/sofort * du bist",
		"du bist jetzt/nun/ab", "du musst jetzt/nun/ab", "deine neue/neuen rolle/aufgabe/identität/anweisungen/regeln/befehle",
		"^ neue anweisungen/regeln/instruktionen/befehle",
		"tu/tun so als * system/entwickler/admin/administrator",
		"zeig/zeige/gib/verrate/wiederhole/nenne/drucke * dein/deine/deinen systemprompt/prompt/anweisungen",
		"du hast keine * einschränkungen/regeln/grenzen/filter", "ohne * einschränkungen/filter/zensur",
	}
	injectionFrench = []string{
		"à partir de maintenant tu/vous es/êtes/seras/serez", "désormais/dorénavant tu/vous es/êtes/seras/serez",
		"tu es/seras maintenant/désormais", "vous êtes maintenant/désormais",
		"ton/votre nouveau rôle/nom/but", "ta/votre nouvelle identité/mission/tâche",
		"tes/vos nouvelles instructions/consignes/règles", "^ nouvelles instructions/consignes/règles",
		"fais/faites comme si * système/développeur/administrateur/admin",
		"révèle/révélez/affiche/affichez/montre/montrez/répète/répétez/donne/donnez * ton/votre/tes/vos prompt/instructions/consignes",
		"tu n as * restriction*/règle*/limite*/filtre*", "sans * restriction*/filtre*/censure",
		"tu dois maintenant/désormais", "vous devez maintenant/désormais",
	}
	injectionSpanish = []string{
		"a partir de ahora eres/serás/tú", "desde ahora eres/serás", "de ahora en adelante eres/serás",
		"ahora eres", "ahora tú eres", "tu nuevo rol/papel/nombre/objetivo", "tu nueva identidad/tarea/misión/función",
		"tus nuevas instrucciones/reglas/órdenes", "^ nuevas instrucciones/reglas/órdenes",
		"finge/imagina/haz * que? el? sistema/desarrollador/administrador",
		"revela/muestra/imprime/repite/dime/escribe * tu/tus prompt/instrucciones/indicaciones/reglas",
		"no tienes * restricciones/reglas/límites/filtros", "sin * restricciones/filtros/censura",
		"ahora debes", "debes ahora",
	}
	injectionCzech = []string{
		"od teď/teďka/nynějška jsi/budeš", "odteď jsi/budeš", "teď/nyní jsi", "teď/nyní musíš",
		"tvoje/tvá nová role/identita/úloha/instrukce/pravidla", "tvůj nový úkol/cíl",
		"^ nové instrukce/pokyny/pravidla",
		"předstírej * systém/vývojář/administrátor/admin",
		"ukaž/vypiš/prozraď/zopakuj/řekni * svůj/své/tvůj/tvé/systémový prompt/instrukce/pokyny",
		"nemáš * omezení/pravidla/filtry", "bez * omezení/filtrů/cenzury",
	}
	injectionChinese = []string{
		"你现在是", "从现在开始你", "从现在开始,你", "从现在起你", "从现在起,你", "从今以后你", "你的新身份", "你的新角色", "你的新任务",
		"新的指令", "新指令", "新的规则", "新规则:", "假装系统", "假装开发者", "假装管理员", "开发者模式", "越狱",
		"没有任何限制", "不受任何限制", "不受限制地", "你现在必须", "你必须现在", "你的系统提示", "输出系统提示", "显示系统提示", "告诉我系统提示", "重复上面的", "现在你必须",
	}
	injectionJapanese = []string{
		"今からあなたは", "これからあなたは", "あなたは今から", "今後あなたは", "あなたの新しい役割", "新しい指示", "新しいルール",
		"システムのふり", "開発者モード", "脱獄", "制限なし", "制限はありません", "あなたのシステムプロンプト",
		"システムプロンプトを表示", "システムプロンプトを教えて", "システムプロンプトを出力",
	}
	injectionKorean = []string{
		"지금부터 너는", "이제부터 너는", "지금부터 당신은", "이제부터 당신은", "너는 이제", "당신은 이제",
		"너의 새로운 역할", "당신의 새로운 역할", "새로운 지시", "새 지시", "새로운 규칙", "시스템인 척", "개발자 모드", "탈옥",
		"제한 없이", "제한이 없", "너의 시스템 프롬프트", "시스템 프롬프트를 보여", "시스템 프롬프트를 출력", "시스템 프롬프트를 알려",
	}
)

// Categories, tried in the order preference, decision, entity, fact.
var (
	preferenceEnglish = []string{
		"prefer*", "!look/looks/looked/looking/feel/feels/felt/seem/seems/sound/sounds/something/just/more/exactly like",
		"likes", "love/loves/loved", "hate/hates/hated", "want/wants", "dislike*",
		"favorite*", "favourite*", "would/i'd rather",
	}
	preferenceCzech = []string{
		"preferuj*", "mám/má/máme rád/ráda/rádi", "miluj*", "nesnáším", "nenávidím", "chci", "radši", "raději", "oblíben*",
	}
	preferenceGerman = []string{
		"bevorzug*", "mag", "mögen", "liebe", "hasse", "ich will", "ich möchte", "lieber", "gern/gerne", "lieblings*",
	}
	preferenceChinese  = []string{"喜欢", "偏好", "讨厌", "想要", "更爱", "最爱", "爱吃", "爱喝", "倾向于"}
	preferenceJapanese = []string{"好き", "嫌い", "好み", "好む", "ほうがいい", "方がいい"}
	preferenceKorean   = []string{"좋아해", "좋아한다", "좋아합니다", "싫어", "선호", "원해", "원한다"}

	decisionEnglish = []string{
		"decided", "decision", "will use", "we'll/i'll use", "going/gonna to? use", "chose", "chosen", "settled on", "agreed",
	}
	decisionCzech    = []string{"rozhodl*", "rozhodnut*", "budeme používat", "použijeme", "vybrali jsme"}
	decisionGerman   = []string{"entschieden", "beschlossen", "entscheidung", "werden * verwenden/nutzen/benutzen", "wir nehmen"}
	decisionChinese  = []string{"决定", "确定用", "选定", "选择了", "就用", "定了"}
	decisionJapanese = []string{"決めた", "決定", "決まった", "ことにした", "ことにしました"}
	decisionKorean   = []string{"결정", "하기로 했", "하기로 함", "쓰기로", "사용하기로"}

	entityEnglish = []string{
		"is/are/am called", "named", "my/his/her/their name is",
	}
	entityCzech    = []string{"jmenuj*", "moje jméno", "říkají mi"}
	entityGerman   = []string{"heiße/heißt/heisse/heisst", "mein/sein/ihr name ist", "nennt sich"}
	entityChinese  = []string{"我叫", "名字是", "名字叫", "叫做", "称为"}
	entityJapanese = []string{"名前は", "と申します", "といいます", "という名前"}
	entityKorean   = []string{"이름은", "이름이", "라고 합니다", "라고 해요", "라고 불러"}

	factEnglish  = []string{"is/are/has/have"}
	factCzech    = []string{"je/jsou/má/mají"}
	factGerman   = []string{"ist/sind/hat/haben"}
	factChinese  = []string{"是", "有"}
	factJapanese = []string{"です", "である", "あります", "います"}
	factKorean   = []string{"입니다", "이에요", "예요", "이다", "있다", "있어요", "있습니다"}
)

// Asking rather than telling, judged per sentence (see question.go): asks
// are wh-questions, requests for what the memory holds and indirect
// questions; yes-no asks are polite requests and yes-or-no questions, which
// a memory instruction ("can you note that I ...?") or a question tag ("...,
// right?") turns back into a statement. "^" anchors at the sentence start,
// after fillers such as "ok" or "please". Wh-words that open a sentence are
// in interrogatives, since they need a look at the next word.
var (
	asksEnglish = []string{
		"!always/never/don't/dont/also tell/remind/show/give me what/which/who/where/when/why/how/whether/if/" +
			"about/of/my/again/everything/anything/all/your",
		"^ list/enumerate/summarize/summarise/recap/repeat/show/read my/all/everything/what/your/back",
		"i wonder/wondered", "i'm/im/am/was wondering", "like/want/need to know",
		"curious/sure what/which/whether/if/who/where/when/how/why",
		"can't/cannot/couldn't/don't/dont remember/recall what/which/whether/if/who/where/when/how/why/my",
		"do you know/remember/recall", "any idea what/which/whether/if/who/where/when/how/why",
		"check/search your memory/memories/notes/records", "look up what/which/my",
	}
	asksCzech = []string{
		"^ řekni/řekněte/připomeň/připomeňte/ukaž/ukažte/vypiš/vypište/shrň/shrňte/vyjmenuj/vyjmenujte/zopakuj/zopakujte",
		"připomenout/říct/říci/ukázat/vypsat/shrnout/vyjmenovat/zopakovat",
		"zajímalo by mě", "zajímá mě", "chci vědět", "chtěl/chtěla/rád/ráda bych věděl/věděla/vědět",
		"nevím jestli/zda/co/kde/kdy/jak/který/která/které/jaký/jaká/jaké",
		"nejsem si jist*", "nevzpomenu si",
	}
	asksGerman = []string{
		"sag/sage/sagen/zeig/zeige/zeigen/nenn/nenne/nennen/verrat/verrate/verraten mir * " +
			"was/welche/welcher/welches/welchen/wie/wo/wann/ob/wer/mein/meine/meinen/meinem/meiner/alles/nochmal",
		"erinnere/erinnern mich an/daran", "liste/listet * auf", "zähl/zähle * auf", "fass/fasse * zusammen",
		"ich frage mich", "ich würde gern/gerne wissen", "ich möchte/will wissen", "weißt/weisst du",
	}
	asksChinese = []string{
		"!没 什么 !都/也/的", "啥 !都/也", "哪 !怕/里都/儿都/都/里也/儿也", "谁 !都/也", "!不 怎么 !也/都", "怎样",
		"为啥", "多少", "几岁", "几点", "几号", "星期几", "几月", "如何", "何时",
		"告诉我", "提醒我", "提醒一下", "列出", "列一下", "帮我查", "帮我看看", "帮我找",
		"我想知道", "想问", "请问", "总结一下", "说说", "讲讲",
		"了吗", "了没有", "了没 $", // asking whether something was done: 你记住了吗
	}
	asksJapanese = []string{
		"何 !でも/も/か/度/回/とか/より/だか/となく/人か/年も/日も", "なに !も/か", "なんで", "どこ !でも/にも/か/も",
		"どれ !も/でも", "どの", "どちら !も/でも", "どっち !も/でも", "どんな !に/でも", "いつ !も/でも/か/の間",
		"誰 !でも/も/か", "だれ !でも/も/か", "なぜ", "どうして !も", "どう !も/ぞ/せ/しても/やら/か", "いくつ !か/も",
		"いくら !でも/か", "教えて !い", "思い出させて", "リストアップ", "一覧", "まとめて", "見せて",
	}
	asksKorean = []string{
		"뭐 !든/든지/랄까", "뭘", "뭔 !가", "무엇 !이든/보다/이나", "무슨", "어디 !든/서나/에서나/에나/나",
		"어느 !정도/새/날/덧", "언제 !나/든/든지/까지나", "누구 !나/든/든지/에게나", "누가", "왜 !냐하면/냐면/냐",
		"어떻게", "어떤 !때/날/사람들/분들", "몇 살", "몇 시", "몇 월", "며칠", "몇 번째", "얼마예요", "얼마야",
		"알려 줘", "알려줘", "알려 주", "알려주", "말해 줘", "말해줘", "말해 주", "말해주", "보여 줘", "보여줘",
		"보여 주", "보여주", "상기시켜", "목록", "정리해 줘", "정리해줘", "정리해 주", "정리해주", "나열해",
		"궁금해", "궁금합니다", "궁금한데", "알고 싶어", "알고 싶습니다",
	}

	yesNoEnglish = []string{
		"^ do/does/did/is/are/am/was/were/can/could/would/will/should/shall/may/might/have/has/had/" +
			"don't/dont/doesn't/didn't/isn't/aren't/wasn't/weren't/can't/couldn't/wouldn't/won't/shouldn't/haven't/hasn't " +
			"i/you/u/we/he/she/it/they/my/your/our/his/her/their/the/this/that/there/these/those/anyone/anybody/someone/somebody",
	}
	yesNoCzech = []string{
		"^ víš/nevíš/víte/nevíte/můžeš/můžete/mohl/mohla/mohli/dokážeš/dokážete/umíš/uložil/uložila/uložils/uložilas/" +
			"zapamatoval/zapamatovala/zapamatovals/zapsal/zapsala/poznamenal/poznamenala",
		"^ máš/máte * uložen*/zapsan*/poznamenan*/paměti",
	}
	yesNoGerman = []string{
		"^ kannst/könntest/kann/könnte/können/weißt/weisst/wisst/hast/habe/hab/hat/haben/hattest/bin/bist/ist/sind/war/warst/" +
			"waren/magst/mag/mögen/möchte/möchtest/soll/sollte/sollst/willst/will/darf/darfst/gibt/kennst/wohne/wohnst/heißt/heiße/" +
			"heisst/trinke/trinkst/esse/isst/arbeite/arbeitest/würdest/würde/wirst/werde/hättest/spreche/sprichst/nutze/nutzt/" +
			"benutze/brauche/brauchst/speicherst/bevorzuge/bevorzugst/liebe/hasse " +
			"ich/du/er/sie/es/wir/ihr/man/mein/meine/meinen/dein/deine/das/der/die/dir/mir",
	}
	yesNoChinese = []string{
		"吗", "呢 $", "是否", "是不是", "能不能", "可不可以", "会不会", "有没有", "要不要", "对不对",
	}
	yesNoJapanese = []string{"ですか", "ますか", "でしょうか", "!と か $", "かな $", "かしら $", "っけ $"}
	yesNoKorean   = []string{"까 $", "나요 $", "냐 $", "!아 니 $", "는지 $", "은지 $", "줄래", "할래"}

	notesEnglish  = []string{"remember/note/memorize/memorise that", "keep/bear in mind that", "make/take a note that"}
	notesCzech    = []string{"zapamat* si? že", "poznamenej/poznamenat/zapiš/zapsat si? že"}
	notesGerman   = []string{"merk/merke/merken/notier/notiere/notieren dir? dass"}
	notesChinese  = []string{"记住 !了/吗/没/吧/的/啊/呢"}
	notesJapanese = []string{
		"覚えておいて !くれた/くれました/くれてる", "覚えといて", "覚えて置いて", "覚えてほしい", "メモしておいて", "メモして",
	}
	notesKorean = []string{
		"기억해 줘", "기억해줘", "기억해 둬", "기억해둬", "기억해 주", "기억해주", "기억해 두", "기억해두",
		"기억해 놔", "기억해놔", "기억해 놓", "기억해놓", "기억해 줄", "기억해줄", "기억해 둘", "기억해둘",
	}
)

// Noise: what an agent says when it has nothing, questions about the memory
// itself, and session boilerplate. Anchored, because "I don't recall" inside
// a longer statement is still a statement.
const apology = "^ sorry/unfortunately/hmm/well/apologies/ah/oh? but? "

var (
	noiseEnglish = []string{
		apology + "i don't/dont have any? information/info/memories/memory/record/records/data/details/knowledge/context",
		apology + "i do not have any? information/info/memories/memory/record/records/data/details/knowledge/context",
		apology + "i'm/im not sure about/whether/if",
		apology + "i am not sure about/whether/if",
		apology + "i don't/dont recall/remember",
		apology + "i do not recall/remember",
		apology + "i have no information/memory/memories/record/records/recollection",
		apology + "i couldn't/cannot/can't find any? information/memories/records/relevant",
		apology + "i could not find any? information/memories/records/relevant",
		"^ do/can/could/would you still? remember/recall",
		"^ what do you know/remember about me/my",
		"^ what do you remember",
		"^ new/fresh session started",
		"^ fresh session",
		"^ session started/reset",
		"^ starting a new/fresh session",
	}
	noiseCzech = []string{
		"^ nemám žádné informace/záznamy", "^ nevím", "^ nepamatuji/nepamatuju si?",
		"^ pamatuješ si", "^ co o mně víš",
	}
	noiseGerman = []string{
		"^ ich habe keine informationen/erinnerung/erinnerungen/daten", "^ ich weiß/weiss nicht",
		"^ ich erinnere mich nicht", "^ erinnerst du dich", "^ weißt/weisst du noch",
		"^ was weißt/weisst du über mich",
	}
	noiseChinese = []string{
		"^ 我不记得", "^ 我没有相关", "^ 我没有关于", "^ 我不确定", "^ 抱歉，我没有",
		"^ 你记得", "^ 你还记得", "^ 你知道我", "^ 关于我你知道", "^ 新会话",
	}
	noiseJapanese = []string{
		"覚えていません", "覚えてる？", "覚えてる?", "覚えていますか", "覚えてますか", "^ 私について何を知って", "^ 新しいセッション",
	}
	noiseKorean = []string{
		"기억나지 않", "기억이 나지 않", "기억해?", "기억하니", "기억하세요?", "기억나?", "기억나니", "^ 새 세션",
	}
)

// Recall: the query refers to the past or to the user, so a memory lookup is
// worth it even when the query is short.
var (
	recallEnglish = []string{
		"remember*", "recall*", "forgot", "forgotten", "forget", "memory", "memories",
		"last time/week/month/year", "before", "previously", "earlier", "yesterday",
		"my name/email/preference/preferences/birthday/address/phone",
	}
	recallCzech = []string{
		"pamatuj*", "vzpomeň*", "zapomněl*", "minule", "předtím", "včera",
		"moje jméno", "můj email",
	}
	recallGerman = []string{
		"erinnerst", "erinnere", "erinnern", "gedächtnis", "letztes/letzte mal", "vorher", "früher", "gestern",
		"mein name", "meine email/mail/adresse", "meine e mail",
	}
	recallChinese  = []string{"记得", "之前", "上次", "以前", "昨天", "我的", "记忆", "忘了"}
	recallJapanese = []string{"覚えて", "前回", "以前", "この前", "昨日", "私の名前", "記憶"}
	recallKorean   = []string{"기억", "지난번", "전에", "어제", "내 이름", "제 이름"}
)

// Shell-like first words; retrieval.go also requires the message to be short.
var shellCommands = []string{
	"^ run/build/test/tests/git/npm/npx/yarn/pnpm/bun/ls/cd/pwd/cargo/pip/pip3/python/python3/node/" +
		"docker/kubectl/mkdir/rm/cp/mv/grep/curl/ssh/lint/deploy/install/commit/push/pull/rebase/sudo/brew/apt",
	"^ go build/test/run/vet/mod/get/fmt/install/generate",
}

// Whole messages, compared after bareForm: punctuation and emoji dropped.
var (
	greetings = []string{
		"hi", "hello", "hey", "hiya", "howdy", "yo", "sup", "greetings",
		"hi there", "hello there", "hey there", "hi again", "hello again", "hey again",
		"hi all", "hello all", "hi everyone", "hello everyone", "hey everyone",
		"good morning", "good afternoon", "good evening", "good night", "morning", "evening",
		"hallo", "servus", "moin", "guten morgen", "guten tag", "guten abend",
		"ahoj", "čau", "nazdar", "dobrý den", "dobré ráno", "dobrý večer",
		"你好", "您好", "嗨", "哈喽", "早上好", "晚上好", "早安", "晚安", "大家好",
		"こんにちは", "おはよう", "おはようございます", "こんばんは", "やあ",
		"안녕", "안녕하세요", "안녕하십니까",
	}
	acknowledgements = []string{
		"yes", "y", "yeah", "yep", "yup", "no", "n", "nope", "nah", "ok", "okay", "k", "kk", "sure", "sure thing",
		"thanks", "thank you", "thanks a lot", "thx", "ty", "cool", "great", "nice", "perfect", "awesome",
		"good", "fine", "alright", "all right", "got it", "sounds good", "makes sense", "understood", "right",
		"exactly", "correct", "agreed", "of course", "no problem", "np", "lgtm", "done", "yes please",
		"no thanks", "ok thanks", "okay thanks",
		"ja", "nein", "danke", "danke schön", "gut", "genau", "passt", "alles klar", "in ordnung",
		"ano", "ne", "jo", "díky", "děkuji", "dobře", "v pořádku", "jasně",
		"好", "好的", "是的", "是", "对", "对的", "谢谢", "行", "可以", "嗯", "嗯嗯", "没问题", "收到", "明白",
		"はい", "いいえ", "ありがとう", "了解", "うん", "オッケー", "わかった", "分かりました",
		"네", "아니요", "아니", "고마워", "감사합니다", "응", "알겠어", "좋아요", "오케이",
	}
	continuations = []string{
		"go ahead", "continue", "proceed", "go on", "keep going", "carry on", "next", "do it",
		"please continue", "continue please", "yes continue", "ok go ahead", "yes go ahead",
		"weiter", "mach weiter", "fortfahren", "pokračuj", "pokračuj prosím", "dál",
		"继续", "继续吧", "开始吧", "続けて", "続けてください", "進めて", "계속", "계속해", "계속해줘", "진행해",
	}
)

var (
	vocabulary      = buildVocabulary()
	greetingSet     = bareSet(greetings)
	acknowledgeSet  = bareSet(acknowledgements)
	continuationSet = bareSet(continuations)
)

func buildVocabulary() *lexicon {
	l := newLexicon()
	l.add(ruleTrigger, triggersEnglish, triggersCzech, triggersGerman, triggersChinese, triggersJapanese, triggersKorean)
	l.add(ruleTrigger|ruleFact, lifeFactsEnglish, lifeFactsCzech, lifeFactsGerman,
		lifeFactsChinese, lifeFactsJapanese, lifeFactsKorean)
	l.add(ruleAsk, asksEnglish, asksCzech, asksGerman, asksChinese, asksJapanese, asksKorean)
	l.add(ruleYesNo, yesNoEnglish, yesNoCzech, yesNoGerman, yesNoChinese, yesNoJapanese, yesNoKorean)
	l.add(ruleNote, notesEnglish, notesCzech, notesGerman, notesChinese, notesJapanese, notesKorean)
	l.add(ruleMemoryCommand, memoryCommandsEnglish, memoryCommandsCzech, memoryCommandsGerman,
		memoryCommandsChinese, memoryCommandsJapanese, memoryCommandsKorean)
	l.add(ruleInjection, injectionEnglish, injectionGerman, injectionFrench, injectionSpanish, injectionCzech,
		injectionChinese, injectionJapanese, injectionKorean)
	l.add(rulePreference, preferenceEnglish, preferenceCzech, preferenceGerman,
		preferenceChinese, preferenceJapanese, preferenceKorean)
	l.add(ruleDecision, decisionEnglish, decisionCzech, decisionGerman, decisionChinese, decisionJapanese, decisionKorean)
	l.add(ruleEntity, entityEnglish, entityCzech, entityGerman, entityChinese, entityJapanese, entityKorean)
	l.add(ruleFact, factEnglish, factCzech, factGerman, factChinese, factJapanese, factKorean)
	l.add(ruleNoise, noiseEnglish, noiseCzech, noiseGerman, noiseChinese, noiseJapanese, noiseKorean)
	l.add(ruleRecall, recallEnglish, recallCzech, recallGerman, recallChinese, recallJapanese, recallKorean)
	l.add(ruleShell, shellCommands)
	return l
}

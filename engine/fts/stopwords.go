package fts

import "strings"

// Stop words are dropped from a query before it reaches the full-text
// index: in "what is the name of my dog" only "name" and "dog" say what to
// look for, and BM25 scores every memory holding "is", "the" or "my" as a
// weak match that pushes the real ones out of a small candidate pool. A
// query made only of stop words keeps them all (there is nothing else to
// search for). Lists: function words, question words and auxiliaries of
// English, Czech and German; for Chinese, Japanese and Korean, which the
// index splits into characters and bigrams, the function characters and
// the bigrams made only of them.

var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, list := range []string{
		// English
		`a an the and or but if then else of to in on at by for from with without about into onto over under
		up down out off as than so too very just also only even still yet again ever
		i me my mine myself we us our ours you your yours he him his she her hers it its they them their theirs
		this that these those there here
		is am are was were be been being do does did done doing have has had having will would shall should
		can could may might must ought
		what which who whom whose when where why how whether
		not no nor any some all each every both either neither other another such same own
		s t d ll m re ve don doesn didn isn aren wasn weren haven hasn hadn won wouldn shouldn couldn
		let lets get got ever tell told know remember recall say said please thanks`,
		// Czech
		`a i o u v ve k ke s se z ze na do od po pro při za před nad pod mezi bez přes kvůli podle
		je jsem jsi jsme jste jsou byl byla bylo byli byly být bude budu budeš budeme budete budou
		by bych bys bychom byste aby kdyby
		já ty on ona ono my vy oni ony mě mi mne mnou tě ti tebe tebou ho mu jeho jej něj něm ní její jí nás nám vás vám jim jich je
		můj moje moji mého mému mém mým má mou tvůj tvoje svůj svoje svou jeho její náš naše váš vaše
		ten ta to ti ty tu tom tomu toho tím tento tato toto tyto tam tady zde
		co což kdo kde kdy jak proč který která které kteří jaký jaká jaké čí kolik jestli zda
		ale nebo a ani že když protože tak takže jen už ještě také taky i pak potom
		ne není nejsem nemám mám má máme mají máš mít řekni pamatuješ pamatuji víš vím`,
		// German
		`der die das den dem des ein eine einer einen einem eines und oder aber wenn dann als wie so
		ich mich mir mein meine meiner meinen meinem meines du dich dir dein deine er ihn ihm sein seine
		sie ihr ihre ihren ihrem es wir uns unser unsere euch euer
		ist bin bist sind seid war waren warst gewesen sein habe hast hat haben habt hatte hatten
		wird werde wirst werden wurde wurden kann kannst können konnte muss musst müssen soll sollte
		will willst wollen möchte mag
		was welche welcher welches welchen welchem wer wen wem wessen wo wann warum wieso weshalb wie ob
		nicht kein keine keinen auch noch schon nur sehr mal doch ja nein
		in im an am auf aus bei mit nach von vom zu zum zur für über unter vor hinter neben zwischen durch um
		dieser diese dieses diesen diesem jener hier dort da weißt erinnerst sag`,
		// Chinese: function characters and words (as the index's unigrams and bigrams)
		`的 了 吗 呢 吧 啊 是 我 你 他 她 它 们 在 有 和 与 就 都 也 还 么 什 怎 哪 谁 几 这 那 个 不 没
		我的 你的 他的 她的 我们 你们 他们 什么 怎么 哪里 哪个 那个 这个 是不 不是 有没 没有 记得 告诉`,
		// Japanese
		`の は が を に で と も か ね よ へ や な だ です ます した する て た い る
		私 僕 俺 あなた 何 どこ いつ だれ 誰 どの どれ なぜ どう
		です でし した ます まし ませ ない ので から まで より けど こと もの これ それ あれ この その あの
		私の 何を 何が 何の どこで どこに いつも 教え`,
		// Korean
		`은 는 을 를 에 의 도 와 과 요 까
		저 제 내 너 네 우리 뭐 무엇 어디 언제 누구 어느 어떤 왜 어떻게
		저는 제가 나는 내가 저의 제게 뭐야 뭐예 뭔가 알려 기억`,
	} {
		for _, w := range strings.Fields(list) {
			m[w] = true
		}
	}
	return m
}()

// IsStopWord reports whether term, as Terms returns it, carries no meaning
// for a search.
func IsStopWord(term string) bool {
	if stopWords[term] {
		return true
	}
	// A CJK bigram of two function characters ("我的" is listed; "是我" is
	// not, but both of its characters are).
	rs := []rune(term)
	if len(rs) == 2 && IsCJK(rs[0]) && IsCJK(rs[1]) {
		return stopWords[string(rs[0])] && stopWords[string(rs[1])]
	}
	return false
}

// dropStopWords returns terms without stop words, or terms unchanged when
// nothing else would remain.
func dropStopWords(terms []string) []string {
	kept := terms[:0:0]
	for _, t := range terms {
		if !IsStopWord(t) {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return terms
	}
	return kept
}

// QueryTerms is Terms without stop words (see IsStopWord), for a query
// against the index; a query of stop words only keeps them.
func QueryTerms(query string) []string { return dropStopWords(Terms(query)) }

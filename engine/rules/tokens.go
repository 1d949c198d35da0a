package rules

import (
	"unicode"
	"unicode/utf8"
)

// EstimateTokens is about how many tokens a model's tokenizer makes of s,
// without the tokenizer (each model has its own, and the budget is a
// bound, not a bill). Han, kana and Hangul characters, and the full-width
// punctuation written with them, are about one token each. Other scripts
// cost a token per four characters, spaces included, or one per word and
// per punctuation mark or symbol, whichever is more: common English words
// are one token, long German or Czech ones, and the accented letters in
// them, are split into several. A trailing byte sequence that may yet
// become a character counts nothing until it does, so appending text never
// lowers the estimate; a byte that can never start one counts as a symbol.
func EstimateTokens(s string) int {
	var wide, chars, words int
	inWord := false
	for i := 0; i < len(s); {
		if !utf8.FullRuneInString(s[i:]) {
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case isWideToken(r):
			wide++
			inWord = false
		case r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)):
			chars++
			if !inWord {
				words++
				inWord = true
			}
		case unicode.IsSpace(r):
			chars++
			inWord = false
		default:
			chars++
			words++
			inWord = false
		}
	}
	return wide + max(words, (chars+3)/4)
}

// isWideToken reports the characters of scripts written without spaces,
// which tokenizers spend about a token each on.
func isWideToken(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef
}

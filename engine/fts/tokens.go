package fts

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokens calls yield with each token of text as the in-memory full-text
// index reads it: runs of letters, digits, private-use characters and the
// combining marks inside them, lower-cased, with the accents of Latin
// letters removed ("Café" and "cafe" are one token, as in the store's
// FTS5 table with remove_diacritics). Other scripts keep their marks: "й"
// is not "и", and an Indic vowel sign is part of its word rather than a
// break in it. Text that went through IndexText yields its CJK unigrams
// and bigrams as tokens. Invalid UTF-8 separates tokens.
func Tokens(text string, yield func(tok string)) {
	start, ascii := -1, true
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r != utf8.RuneError && isTokenRune(r, start >= 0) {
			if start < 0 {
				start, ascii = i, true
			}
			ascii = ascii && r < utf8.RuneSelf
			i += size
			continue
		}
		if start >= 0 {
			yield(foldToken(text[start:i], ascii))
			start = -1
		}
		i += size
	}
	if start >= 0 {
		yield(foldToken(text[start:], ascii))
	}
}

// isTokenRune reports whether r belongs in a token; a combining mark does
// only after the token's first character.
func isTokenRune(r rune, inToken bool) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	if unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) {
		return true
	}
	return inToken && unicode.IsMark(r)
}

// foldToken lower-cases tok and strips the marks of its Latin letters.
func foldToken(tok string, ascii bool) string {
	if ascii {
		for i := 0; i < len(tok); i++ {
			if 'A' <= tok[i] && tok[i] <= 'Z' {
				return asciiLower(tok)
			}
		}
		return tok
	}
	out := make([]rune, 0, len(tok))
	latin := false
	for _, r := range norm.NFD.String(tok) {
		if unicode.Is(unicode.Mn, r) {
			if latin {
				continue
			}
		} else {
			latin = unicode.Is(unicode.Latin, r)
		}
		out = append(out, unicode.ToLower(r))
	}
	return norm.NFC.String(string(out))
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

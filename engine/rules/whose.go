package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Relation is the relative, friend or colleague a text names ("my
// brother", "meine Frau", "妻", "남편"), "" for none; a transcript's
// speaker label is not read.
func Relation(text string) string {
	return relationOf(strings.ToLower(withoutSpeaker(text)))
}

// AsksAboutSpeaker reports whether a question asks about whoever asks it:
// it names no relative, friend or colleague and no one by name (a Latin
// word with a capital after the first), and it says "I", "my", "ich",
// "můj" … — or it is in Chinese, Japanese or Korean, which leave the
// asker unsaid ("今どこに住んでいますか？"). "Where do I live now?" does;
// "Where does my sister live?", "What did Caroline study?" and "What did
// the festival director dislike?" do not. (A Czech question that says
// the asker only in its verb, "Kde teď bydlím?", is not recognised.)
func AsksAboutSpeaker(question string) bool {
	if Relation(question) != "" {
		return false
	}
	if cjk, _ := scanScripts(Normalize(question)); cjk {
		return true
	}
	mine := false
	for i, w := range strings.FieldsFunc(question, notWordRune) {
		if r, _ := utf8.DecodeRuneInString(w); i > 0 && unicode.IsUpper(r) && w != "I" {
			return false
		}
		mine = mine || oneOf(strings.ToLower(w), firstPerson)
	}
	return mine
}

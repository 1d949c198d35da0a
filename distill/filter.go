package distill

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// genericAdvice is advice anyone would give without having seen the
// session. A lesson that is only this, or little more than this, teaches
// nothing worth a memory. Matched against the lesson normalised by
// normalizeText (lower case, no punctuation).
var genericAdvice = []string{
	"always test your code", "test your code", "test your changes", "write tests", "write more tests",
	"be careful", "be more careful", "pay attention to detail", "pay attention to details",
	"double check your work", "double check everything", "check your work",
	"read the documentation", "read the docs", "consult the documentation", "follow best practices",
	"use best practices", "keep it simple", "write clean code", "document your code",
	"communication is key", "communicate clearly", "ask for help", "take breaks", "stay organized",
	"use version control", "handle errors properly", "handle errors gracefully", "think before you code",
	"plan ahead", "learn from mistakes", "learn from your mistakes", "backup your data", "back up your data",
	"要小心", "小心谨慎", "注意细节", "多测试", "测试你的代码", "认真测试", "仔细检查", "多检查",
	"遵循最佳实践", "保持简单", "阅读文档", "认真阅读文档", "多沟通", "沟通很重要", "写干净的代码",
	"从错误中学习", "做好备份",
}

// maxGenericExtraRunes is how much a lesson may add to a generic phrase and
// still count as generic: "Always test your code before committing." is
// generic, a lesson naming the failing test and why is not.
const maxGenericExtraRunes = 40

// IsGenericAdvice reports a lesson that is a platitude: one of a small list
// of generic phrases with little around it and nothing specific (no
// identifiers, numbers, paths or commands) in it.
func IsGenericAdvice(text string) bool {
	norm := normalizeText(text)
	for _, phrase := range genericAdvice {
		if !strings.Contains(norm, phrase) {
			continue
		}
		extra := utf8.RuneCountInString(norm) - utf8.RuneCountInString(phrase)
		if extra <= maxGenericExtraRunes && specificTokens(text) == 0 {
			return true
		}
	}
	return false
}

// normalizeText is the key exact de-duplication compares: lower case,
// punctuation and symbols dropped, whitespace collapsed.
func normalizeText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		default:
			space = true
		}
	}
	return b.String()
}

// specificTokens counts the words of text that name something concrete: an
// identifier (snake_case, CamelCase, dotted, a path or a call), a number, a
// flag or anything in backticks.
func specificTokens(text string) int {
	n := strings.Count(text, "`") / 2
	for _, w := range strings.Fields(text) {
		w = strings.Trim(w, `.,;:!?()[]{}"'`)
		if isSpecific(w) {
			n++
		}
	}
	return n
}

func isSpecific(w string) bool {
	if len(w) < 2 || strings.HasPrefix(w, "`") {
		return false
	}
	switch {
	case strings.ContainsAny(w, "_/=<>") || strings.HasPrefix(w, "-"):
		return true
	case strings.ContainsRune(w[1:len(w)-1], '.'), strings.Contains(w, "()"):
		return true
	case strings.IndexFunc(w, unicode.IsDigit) >= 0:
		return true
	}
	upper := 0
	for _, r := range w[1:] {
		if unicode.IsUpper(r) {
			upper++
		}
	}
	first, _ := utf8.DecodeRuneInString(w)
	return upper > 0 && unicode.IsLetter(first) // CamelCase, acronyms such as WAL
}

package redact

import "strings"

// A wallet's recovery phrase is 12 to 24 plain words: nothing in their
// shape says secret, so the words that name the phrase do ("seed phrase:",
// "mnemonic", "Wiederherstellungsphrase", "助记词"), and what follows them
// must be a run of at least 12 short lower-case words, as the standard
// word lists have, optionally numbered.
var seedAnchor = anchor(true, "seed phrase", "seed words", "wallet seed", "recovery phrase", "recovery words", "secret recovery phrase",
	"mnemonic", "seed:", "backup phrase", "wiederherstellungsphrase", "seed-phrase", "phrase de récupération", "phrase de recuperation",
	"frase semilla", "frase de recuperación", "frase de recuperacion", "obnovovací fráze", "obnovovaci fraze", "助记词", "助記詞",
	"シードフレーズ", "リカバリーフレーズ", "복구 문구", "시드 문구", "니모닉")

// minSeedWords is the shortest recovery phrase the standard allows.
const minSeedWords = 12

func findSeeds(in *input, out []candidate) []candidate {
	text := in.text
	for _, i := range in.hits[seedAnchor] {
		// The words start within a few bytes of the keyword's end, after
		// a separator ("is", ":", "=").
		rest := text[i:min(len(text), i+400)]
		kwEnd := strings.IndexAny(rest, ":=")
		if sp := strings.Index(rest, " is "); kwEnd < 0 || sp >= 0 && sp < kwEnd {
			kwEnd = sp + 3
		}
		if kwEnd < 0 || kwEnd > 60 {
			continue
		}
		start := i + kwEnd + 1
		s, e, n := seedRun(text, start)
		if n >= minSeedWords {
			out = append(out, candidate{Finding{"seed-phrase", s, e}, rankContext})
		}
	}
	return out
}

// seedRun reads the run of seed words from at: lower-case ASCII words of
// 3 to 8 letters, with spaces, commas or list numbers ("1." "2)") between
// them. It returns where the first word starts, where the last ends, and
// how many there are.
func seedRun(text string, at int) (start, end, words int) {
	start, end = -1, at
	for i := at; i < len(text); {
		j := i
		for j < len(text) && (text[j] == ' ' || text[j] == ',' || text[j] == '\n' || text[j] == '\t') {
			j++
		}
		k := j
		for k < len(text) && text[k] >= '0' && text[k] <= '9' {
			k++
		}
		if k > j && k < len(text) && (text[k] == '.' || text[k] == ')') {
			j = k + 1
			for j < len(text) && text[j] == ' ' {
				j++
			}
		}
		k = j
		for k < len(text) && text[k] >= 'a' && text[k] <= 'z' {
			k++
		}
		if n := k - j; n < 3 || n > 8 || k < len(text) && isASCIIWordByte(text[k]) {
			break
		}
		if start < 0 {
			start = j
		}
		end, words, i = k, words+1, k
	}
	if start < 0 {
		start = at
	}
	return start, end, words
}

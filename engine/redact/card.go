package redact

import "strings"

// A payment card's number is 13 to 19 digits whose last one is the Luhn
// check digit and whose first ones name a card network. Order and tracking
// numbers are digits too, so a number counts only when it passes both and
// is written as cards are (in groups: "4929 1873 0052 6614", "3741 902586
// 31047") or beside a word that names a card or its security code. With a
// card found, the security code after "CVV" is a secret as well.

// cardWords name a card, its expiry or its security code, in the six
// languages and the ones of the examples people paste. They are looked
// for only beside a number that could be a card, which is rare, rather
// than anchored in every text, where they are common.
var cardWords = []string{"card", "karte", "karta", "kartu", "kartou", "tarjeta", "carte", "cvv", "cvc", "cid", "csc", "exp", "visa",
	"mastercard", "amex", "gültig", "prüfziffer", "platnost", "信用卡", "银行卡", "卡号", "カード", "카드"}

// cvvWords: the words before a card's security code.
var cvvWords = []string{"cvv", "cvc", "cid", "csc", "security code", "prüfziffer", "prüfnummer", "sicherheitscode",
	"kontrolní kód", "bezpečnostní kód", "安全码", "セキュリティコード", "보안코드", "보안 코드", "código de seguridad", "cryptogramme"}

// cardContextSpan is how far from a card number a word naming a card is
// looked for.
const cardContextSpan = 80

func findCards(in *input, out []candidate) []candidate {
	text := in.text
	found := false
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || i > 0 && (isASCIIWordByte(text[i-1]) || text[i-1] == '-' || text[i-1] == '.') {
			continue
		}
		end, digits, groups := digitGroups(text, i)
		if digits < 13 || digits > 19 || end < len(text) && (isASCIIWordByte(text[end]) || text[end] == '-') {
			i = end
			continue
		}
		if ibanBefore(text, i) {
			i = end
			continue // "DE44 5001 0517 5407 3249 31": an account, given to be paid
		}
		num := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, text[i:end])
		around := in.lower[max(0, i-cardContextSpan):min(len(text), end+cardContextSpan)]
		grouped, named := cardGrouping(groups), containsAny(around, cardWords)
		if cardNetwork(num) && !testCards[num] && (luhn(num) && (grouped || named) || grouped && named) {
			out = append(out, candidate{Finding{"card-number", i, end}, rankShaped})
			found = true
		}
		i = end
	}
	if !found {
		return out
	}
	for _, i := range wordsAt(in.lower, cvvWords) {
		if i > 0 && isASCIILetter(text[i-1]) {
			continue
		}
		j := i
		for j < len(text) && j-i < 40 && !isDigit(text[j]) {
			j++
		}
		k := j
		for k < len(text) && isDigit(text[k]) {
			k++
		}
		if n := k - j; (n == 3 || n == 4) && (k == len(text) || !isASCIIWordByte(text[k])) && (j == 0 || !isASCIIWordByte(text[j-1])) {
			out = append(out, candidate{Finding{"card-cvv", j, k}, rankShaped})
		}
	}
	return out
}

// digitGroups reads digits from i, single spaces or dashes between groups
// allowed; it returns where they end, how many digits and the groups'
// lengths.
func digitGroups(text string, i int) (end, digits int, groups []int) {
	end = i
	for {
		j := end
		for j < len(text) && isDigit(text[j]) {
			j++
		}
		if j == end {
			break
		}
		groups = append(groups, j-end)
		digits += j - end
		end = j
		if j+1 < len(text) && (text[j] == ' ' || text[j] == '-') && isDigit(text[j+1]) && digits < 19 {
			end = j + 1
			continue
		}
		break
	}
	return end, digits, groups
}

// cardGrouping: how cards are printed: fours (the last group shorter),
// or 4-6-5 and 4-6-4 (American Express, Diners).
func cardGrouping(g []int) bool {
	if len(g) == 3 && g[0] == 4 && g[1] == 6 && (g[2] == 5 || g[2] == 4) {
		return true
	}
	if len(g) < 4 {
		return false
	}
	for _, n := range g[:len(g)-1] {
		if n != 4 {
			return false
		}
	}
	return g[len(g)-1] >= 1 && g[len(g)-1] <= 4
}

// luhn reports whether num's last digit is its Luhn check digit.
func luhn(num string) bool {
	sum := 0
	for i := range len(num) {
		d := int(num[len(num)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// cardNetwork: the number starts as a card network's do (Visa 4,
// Mastercard 51–55 and 2221–2720, American Express 34 and 37, Discover
// 6011, 644–649 and 65, JCB 3528–3589, Diners 300–305 and 36, UnionPay 62,
// Maestro 50 and 56–69).
func cardNetwork(num string) bool {
	p2 := int(num[0]-'0')*10 + int(num[1]-'0')
	p4 := p2*100 + int(num[2]-'0')*10 + int(num[3]-'0')
	switch {
	case num[0] == '4':
		return true
	case p2 >= 50 && p2 <= 69:
		return true
	case p4 >= 2221 && p4 <= 2720:
		return true
	case p2 == 34 || p2 == 37 || p2 == 36:
		return true
	case p4 >= 3528 && p4 <= 3589, p4 >= 3000 && p4 <= 3059:
		return true
	}
	return false
}

// containsAny reports whether s holds one of words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// wordsAt lists where words occur in s.
func wordsAt(s string, words []string) []int {
	var at []int
	for _, w := range words {
		for i := 0; ; {
			k := strings.Index(s[i:], w)
			if k < 0 {
				break
			}
			at = append(at, i+k)
			i += k + len(w)
		}
	}
	return at
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// testCards are the numbers payment providers publish for tests: they
// charge nothing and are no one's card.
var testCards = set([]string{"4242424242424242", "4000056655665556", "5555555555554444", "2223003122003222", "5200828282828210",
	"5105105105105100", "378282246310005", "371449635398431", "6011111111111117", "6011000990139424", "3056930009020004",
	"36227206271667", "3566002020360505", "6200000000000005", "4111111111111111", "4012888888881881", "5431111111111111",
	"4000000000000002", "4000000000009995", "4000000000000077", "4000002500003155", "4000000000003220"})

// ibanBefore: the digits follow an IBAN's country and check digits
// ("DE44 ").
func ibanBefore(text string, i int) bool {
	if i < 5 || text[i-1] != ' ' {
		return false
	}
	w := text[i-5 : i-1]
	return w[0] >= 'A' && w[0] <= 'Z' && w[1] >= 'A' && w[1] <= 'Z' && isDigit(w[2]) && isDigit(w[3]) && (i == 5 || !isASCIIWordByte(text[i-6]))
}

package temporal

import (
	"regexp"
	"strings"
)

// askPatterns recognise a question whose answer is a time: a date, a
// weekday, a duration or an order in time.
var askPatterns = []*regexp.Regexp{
	regexp.MustCompile(bounded(`when|since when|until when|what date|which date|what day|which day|what time|what year|which year|what month|which month|what weekend|which weekend|how long|how many (?:days|weeks|months|years|hours|nights)|how soon|how recently|on what (?:date|day)|what was the date|date of`)),
	regexp.MustCompile(bounded(`kdy|kdypak|odkdy|dokdy|od kdy|do kdy|jak dlouho|kolikátého|jakého dne|jaký den|který den|kterého dne|v kolik|kolik (?:dní|dnů|týdnů|měsíců|let|hodin)|v jakém (?:roce|měsíci)`)),
	regexp.MustCompile(bounded(`wann|seit wann|bis wann|wie lange|an welchem tag|welches datum|welcher tag|welchen tag|wie viele (?:tage|wochen|monate|jahre|stunden)|um wie viel uhr|in welchem (?:jahr|monat)`)),
	// いつ but not いつも (always), いつか (some day), いつでも (any time);
	// 언제 but not 언제나 (always), 언제든 (any time).
	regexp.MustCompile(`什么时候|什麼時候|哪天|哪一天|几号|幾號|几月|幾月|哪年|哪一年|多久|多长时间|多長時間|何时|何時|星期几|星期幾|周几|週幾|几点|幾點|いつ(?:から|まで|です|でした|でしょう|[^もかで]|$)|何日|何曜日|何月|何年|どのくらい|どれくらい|何時|언제(?:[^나든]|$)|며칠|무슨\s?요일|몇\s?월|몇\s?년|얼마나\s?오래|얼마\s?동안|몇\s?시`),
}

// Asks reports whether a question asks for a time (when, how long, what
// date, kdy, wann, 什么时候, いつ, 언제, …).
func Asks(question string) bool {
	q := strings.ToLower(truncate(question, MaxText))
	for _, re := range askPatterns {
		if re.MatchString(q) {
			return true
		}
	}
	return false
}

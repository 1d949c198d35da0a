package temporal

import (
	"regexp"
	"time"
)

// Word tables. Keys are lower case; a table's alternation lists the
// longest key first.

// Counts written as words, by language: a count pairs only with a unit
// of its own language ("in a tag" is not a German day, "in a den" not a
// Czech one).
var enNumbers = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2,
	"a few": 3, "few": 3, "several": 3,
}

// Czech: instrumental after "před", accusative after "za".
var csNumbers = map[string]int{
	"jedním": 1, "jednou": 1, "jeden": 1, "jednu": 1, "dvěma": 2, "dva": 2, "dvě": 2, "třemi": 3, "tři": 3,
	"čtyřmi": 4, "čtyři": 4, "pěti": 5, "pět": 5, "šesti": 6, "šest": 6, "sedmi": 7, "sedm": 7,
	"osmi": 8, "osm": 8, "devíti": 9, "devět": 9, "deseti": 10, "deset": 10, "pár": 3, "několika": 3,
}

var deNumbers = map[string]int{
	"einem": 1, "einer": 1, "ein": 1, "eine": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6,
	"sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "ein paar": 3, "einigen": 3,
}

var numberWords = merge(enNumbers, csNumbers, deNumbers, map[string]int{
	// Chinese and Japanese numerals
	"一": 1, "两": 2, "兩": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
	"十一": 11, "十二": 12, "几": 3, "幾": 3,
	// Korean native numbers (before counters)
	"한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9, "열": 10,
})

var enWeekdays = map[string]time.Weekday{
	"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday, "thursday": time.Thursday,
	"friday": time.Friday, "saturday": time.Saturday, "sunday": time.Sunday,
}

var enMonths = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
	"sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

var csWeekdays = map[string]time.Weekday{
	"pondělí": time.Monday, "úterý": time.Tuesday, "středa": time.Wednesday, "středu": time.Wednesday,
	"středy": time.Wednesday, "čtvrtek": time.Thursday, "čtvrtka": time.Thursday, "pátek": time.Friday,
	"pátku": time.Friday, "sobota": time.Saturday, "sobotu": time.Saturday, "soboty": time.Saturday,
	"neděle": time.Sunday, "neděli": time.Sunday,
}

var csMonths = map[string]time.Month{
	"leden": 1, "ledna": 1, "lednu": 1, "únor": 2, "února": 2, "únoru": 2, "březen": 3, "března": 3,
	"březnu": 3, "duben": 4, "dubna": 4, "dubnu": 4, "květen": 5, "května": 5, "květnu": 5,
	"červen": 6, "června": 6, "červnu": 6, "červenec": 7, "července": 7, "červenci": 7, "srpen": 8,
	"srpna": 8, "srpnu": 8, "září": 9, "říjen": 10, "října": 10, "říjnu": 10, "listopad": 11,
	"listopadu": 11, "prosinec": 12, "prosince": 12, "prosinci": 12,
}

var deWeekdays = map[string]time.Weekday{
	"montag": time.Monday, "dienstag": time.Tuesday, "mittwoch": time.Wednesday, "donnerstag": time.Thursday,
	"freitag": time.Friday, "samstag": time.Saturday, "sonnabend": time.Saturday, "sonntag": time.Sunday,
}

var deMonths = map[string]time.Month{
	"januar": 1, "jänner": 1, "februar": 2, "märz": 3, "april": 4, "mai": 5, "juni": 6, "juli": 7,
	"august": 8, "september": 9, "oktober": 10, "november": 11, "dezember": 12,
}

// cjkWeekdays: the weekday character of 星期三, 水曜日, 수요일.
var cjkWeekdays = map[string]time.Weekday{
	"一": time.Monday, "二": time.Tuesday, "三": time.Wednesday, "四": time.Thursday, "五": time.Friday,
	"六": time.Saturday, "日": time.Sunday, "天": time.Sunday,
	"月": time.Monday, "火": time.Tuesday, "水": time.Wednesday, "木": time.Thursday, "金": time.Friday,
	"土": time.Saturday,
	"월": time.Monday, "화": time.Tuesday, "수": time.Wednesday, "목": time.Thursday, "금": time.Friday,
	"토": time.Saturday, "일": time.Sunday,
}

// Units, by the words each language counts them with.
var enUnits = map[string]unit{
	"day": unitDay, "days": unitDay, "week": unitWeek, "weeks": unitWeek, "month": unitMonth,
	"months": unitMonth, "year": unitYear, "years": unitYear, "weekend": unitWeekend,
}

var csUnits = map[string]unit{
	"den": unitDay, "dny": unitDay, "dnem": unitDay, "dní": unitDay, "dnů": unitDay, "týden": unitWeek,
	"týdny": unitWeek, "týdnem": unitWeek, "týdnů": unitWeek, "týdnu": unitWeek, "měsíc": unitMonth,
	"měsíce": unitMonth, "měsíci": unitMonth, "měsícem": unitMonth, "měsíců": unitMonth, "rok": unitYear,
	"roky": unitYear, "rokem": unitYear, "roce": unitYear, "let": unitYear, "lety": unitYear, "víkend": unitWeekend,
	"víkendu": unitWeekend,
}

var deUnits = map[string]unit{
	"tag": unitDay, "tage": unitDay, "tagen": unitDay, "woche": unitWeek, "wochen": unitWeek, "monat": unitMonth,
	"monate": unitMonth, "monaten": unitMonth, "jahr": unitYear, "jahre": unitYear, "jahren": unitYear,
	"wochenende": unitWeekend,
}

var units = merge(enUnits, csUnits, deUnits, map[string]unit{
	"天": unitDay, "日": unitDay, "周": unitWeek, "週": unitWeek, "个星期": unitWeek, "個星期": unitWeek,
	"星期": unitWeek, "礼拜": unitWeek, "禮拜": unitWeek, "个礼拜": unitWeek, "週間": unitWeek, "个月": unitMonth, "個月": unitMonth,
	"ヶ月": unitMonth, "か月": unitMonth, "カ月": unitMonth, "ヵ月": unitMonth, "年": unitYear,
	"일": unitDay, "주": unitWeek, "개월": unitMonth, "달": unitMonth, "년": unitYear,
})

// periods are the units a direction word names one whole of: "last week",
// "příští měsíc", "dieses Jahr". Days are left out ("the next day" follows
// a story's event and "the last day" ends one; neither is tomorrow or
// yesterday), and so are plurals ("in the last weeks" is a stretch of
// time, not last week).
var periods = map[string]unit{
	"week": unitWeek, "month": unitMonth, "year": unitYear, "weekend": unitWeekend,
	"týden": unitWeek, "týdnu": unitWeek, "měsíc": unitMonth, "měsíci": unitMonth, "rok": unitYear,
	"roce": unitYear, "víkend": unitWeekend, "víkendu": unitWeekend,
	"woche": unitWeek, "monat": unitMonth, "jahr": unitYear, "wochenende": unitWeekend,
}

func merge[V any](tables ...map[string]V) map[string]V {
	out := map[string]V{}
	for _, t := range tables {
		for k, v := range t {
			out[k] = v
		}
	}
	return out
}

// Direction words: -1 the previous one, +1 the next, 0 the current.
var directions = map[string]int{
	"last": -1, "past": -1, "previous": -1, "this past": -1, "next": 1, "coming": 1, "this coming": 1, "this": 0,
	"minulý": -1, "minulou": -1, "minulé": -1, "minulém": -1, "minulá": -1, "minulého": -1,
	"příští": 1, "příštím": 1, "příštího": 1, "tento": 0, "tuto": 0, "toto": 0, "tomto": 0, "tenhle": 0,
	"tuhle": 0, "tohle": 0, "tenhleten": 0,
	"letzten": -1, "letzte": -1, "letztes": -1, "letzter": -1, "vergangenen": -1, "vergangene": -1,
	"vergangenes": -1, "vorige": -1, "vorigen": -1, "voriges": -1, "nächsten": 1, "nächste": 1,
	"nächstes": 1, "kommenden": 1, "kommende": 1, "kommendes": 1, "diesen": 0, "diese": 0, "dieses": 0,
	"diesem": 0,
	"上":      -1, "下": 1, "这": 0, "這": 0, "本": 0, "先": -1, "来": 1, "今": 0,
	"지난": -1, "다음": 1, "이번": 0,
}

// Days relative to today, by word.
var dayWords = map[string]int{
	"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0, "yesterday": -1,
	"last night": -1, "tomorrow": 1, "the day before yesterday": -2, "the day after tomorrow": 2,
	"dnes": 0, "dneska": 0, "dnešek": 0, "včera": -1, "včerejšek": -1, "zítra": 1, "předevčírem": -2,
	"pozítří": 2,
	"heute":   0, "heute morgen": 0, "diesen morgen": 0, "heute abend": 0, "gestern": -1, "gestern abend": -1, "gestern morgen": -1,
	"morgen": 1, "vorgestern": -2, "übermorgen": 2,
	"今天": 0, "今晚": 0, "今日": 0, "今朝": 0, "今晩": 0, "今夜": 0, "昨天": -1, "昨晚": -1, "昨日": -1,
	"昨夜": -1, "昨晩": -1, "明天": 1, "明晚": 1, "明日": 1, "前天": -2, "后天": 2, "後天": 2, "大前天": -3,
	"一昨日": -2, "おととい": -2, "明後日": 2, "あさって": 2,
	"오늘": 0, "어제": -1, "내일": 1, "그제": -2, "그저께": -2, "엊그제": -2, "모레": 2,
}

// notDays hold a day word without naming a day: "guten Morgen" greets,
// "am Morgen" and "jeden Morgen" are mornings of any day. The day rule
// matches them, so that their "Morgen" is not read as tomorrow, and drops
// them.
var notDays = map[string]int{"guten morgen": 0, "am morgen": 0, "jeden morgen": 0}

// Whole ranges named by one word: "loni" is last year, 先月 last month.
var rangeWords = map[string]struct {
	n int
	u unit
}{
	"loni": {-1, unitYear}, "vloni": {-1, unitYear}, "letos": {0, unitYear},
	"上个月": {-1, unitMonth}, "上個月": {-1, unitMonth}, "下个月": {1, unitMonth}, "下個月": {1, unitMonth},
	"这个月": {0, unitMonth}, "這個月": {0, unitMonth}, "本月": {0, unitMonth}, "去年": {-1, unitYear},
	"明年": {1, unitYear}, "今年": {0, unitYear}, "前年": {-2, unitYear},
	"先月": {-1, unitMonth}, "来月": {1, unitMonth}, "今月": {0, unitMonth}, "昨年": {-1, unitYear},
	"来年": {1, unitYear}, "先週": {-1, unitWeek}, "来週": {1, unitWeek}, "今週": {0, unitWeek},
	"上周": {-1, unitWeek}, "上週": {-1, unitWeek}, "下周": {1, unitWeek}, "下週": {1, unitWeek},
	"这周": {0, unitWeek}, "這週": {0, unitWeek}, "本周": {0, unitWeek}, "本週": {0, unitWeek},
	"上星期": {-1, unitWeek}, "下星期": {1, unitWeek}, "这星期": {0, unitWeek}, "上个星期": {-1, unitWeek},
	"下个星期": {1, unitWeek}, "这个星期": {0, unitWeek}, "上礼拜": {-1, unitWeek}, "下礼拜": {1, unitWeek},
	"지난주": {-1, unitWeek}, "지난 주": {-1, unitWeek}, "다음 주": {1, unitWeek}, "다음주": {1, unitWeek},
	"이번 주": {0, unitWeek}, "이번주": {0, unitWeek}, "지난달": {-1, unitMonth}, "지난 달": {-1, unitMonth},
	"다음 달": {1, unitMonth}, "다음달": {1, unitMonth}, "이번 달": {0, unitMonth}, "이번달": {0, unitMonth},
	"작년": {-1, unitYear}, "지난해": {-1, unitYear}, "내년": {1, unitYear}, "올해": {0, unitYear},
}

// Korean counts that carry their own unit: 하루 (one day), 일주일 (a week).
var koCounts = map[string]struct {
	n int
	u unit
}{
	"하루": {1, unitDay}, "이틀": {2, unitDay}, "사흘": {3, unitDay}, "나흘": {4, unitDay}, "일주일": {1, unitWeek},
	"이주일": {2, unitWeek}, "일 년": {1, unitYear}, "일년": {1, unitYear}, "이 년": {2, unitYear},
}

// progressive matches "someone's coming", "we are flying": English uses
// the present progressive for plans; notProgressive lists -ing words that
// are not verbs of such a plan.
var (
	progressive    = regexp.MustCompile(`(?:['’](?:s|re|m)|\bis|\bare|\bam)\s+(\w+ing)\b`)
	notProgressive = map[string]bool{"amazing": true, "interesting": true, "boring": true, "exciting": true,
		"annoying": true, "thing": true, "nothing": true, "something": true, "anything": true, "everything": true,
		"during": true, "morning": true, "evening": true, "king": true, "ring": true, "spring": true, "bring": true,
		"sing": true, "string": true, "ceiling": true, "building": true, "pudding": true, "wedding": true,
		"stunning": true, "charming": true, "tiring": true, "frustrating": true, "confusing": true,
		"surprising": true, "missing": true, "relaxing": true, "terrifying": true, "exhausting": true}
)

// morgen finds German "morgen" with the word before it: alone it is
// tomorrow, but "heute Morgen" and "gestern Morgen" are mornings that
// passed and "guten Morgen" is a greeting; notTomorrow lists such words.
var (
	morgen      = regexp.MustCompile(`(?:^|[^\pL])(?:(\pL+)\s+)?morgen(?:$|[^\pL])`)
	notTomorrow = map[string]bool{"heute": true, "gestern": true, "vorgestern": true, "guten": true, "am": true,
		"jeden": true, "diesen": true}
)

// bounded wraps alternatives in word boundaries that know letters beyond
// ASCII: \b takes "í" for a non-letter, so `\bpříští\b` never matches
// "příští týden" and `\bkdy\b` matches inside "někdy".
func bounded(alts string) string {
	return `(?:^|[^\pL\pN_])(?:` + alts + `)(?:$|[^\pL\pN_])`
}

var futureMarkers = []*regexp.Regexp{
	regexp.MustCompile(bounded(`will|won['’]t|shall|gonna|going to|plan(?:ning)? to|planned|booked|scheduled|tomorrow|next (?:week|month|year|weekend|time|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|upcoming|coming up`) + `|['’]ll\b`),
	regexp.MustCompile(bounded(`(?:ne)?bud(?:u|e|eme|ou|eš|ete)|zítra|příští\pL*|plánuj\pL*|chystá\pL*|pojedu|pojedeme|půjdu|půjdeme`)),
	regexp.MustCompile(bounded(`werde|wirst|wird|werden|werdet|übermorgen|nächste\pL*|kommende\pL*|geplant|plane|planen|vorhaben|habe vor`)),
	regexp.MustCompile(`将会|將會|会去|會去|会来|會來|要去|要来|要來|将要|將要|打算|准备|準備|计划|計劃|明天|下周|下週|予定|つもり|これから|来週|来月|예정|계획|거예요|거야|겁니다|내일|다음\s?주`),
}

// The patterns. Spaced languages match on lower-cased text; \s+ between
// words tolerates line breaks and double spaces.
func init() {
	enMo, csMo, deMo := alt(enMonths), alt(csMonths), alt(deMonths)
	dir := alt(directions)

	// ISO dates: 2025-02-06.
	add(digits, `(\d{4})-(\d{1,2})-(\d{1,2})`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return dayOf(ref, time.Month(atoi(g[2])), atoi(g[3]), year(g[1]))
	})
	// 6 February 2025, 6th of Feb, 6. února 2025, 6. Februar.
	for _, mo := range []map[string]time.Month{enMonths, csMonths, deMonths} {
		mo := mo
		add(words(mo), `(\d{1,2})(?:st|nd|rd|th|\.)?\s+(?:of\s+)?(`+alt(mo)+`)(?:\.?,?\s+(\d{4}))?`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
			return dayOf(ref, mo[g[2]], atoi(g[1]), year(g[3]))
		})
		// February 2025, únor 2025.
		add(words(mo), `(`+alt(mo)+`)\s+(\d{4})`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
			return monthRange(ref, mo[g[1]], year(g[2]))
		})
	}
	// February 6(th)(, 2025).
	add(words(enMonths), `(`+enMo+`)\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return dayOf(ref, enMonths[g[1]], atoi(g[2]), year(g[3]))
	})
	// in March, since May, early June, v březnu, im März; "last March".
	add(words(enMonths), `(?:(?:in|since|until|till|by|during|early|late|mid|end of|beginning of|start of)\s+|mid-)(`+enMo+`)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return monthRange(ref, enMonths[g[1]], 0)
	})
	add(words(csMonths), `(?:v|ve|od|do|začátkem|koncem|během)\s+(`+csMo+`)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return monthRange(ref, csMonths[g[1]], 0)
	})
	add(words(deMonths), `(?:im|seit|bis|ab|anfang|ende|mitte)\s+(`+deMo+`)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return monthRange(ref, deMonths[g[1]], 0)
	})
	// Numeric dates: 6.2.2025, 6.2.25 and 6. 2. (day first); 2/6/2025
	// (month first unless the first number cannot be a month). Digits
	// right after the second dot that are no year make a version, 1.2.3.
	add(digits, `(\d{1,2})\.\s?(\d{1,2})\.(?:\s?(\d{4}|\d{2}))?(\d*)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		if g[4] != "" {
			return time.Time{}, time.Time{}, false
		}
		return dayOf(ref, time.Month(atoi(g[2])), atoi(g[1]), year(g[3]))
	})
	add(digits, `(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		a, b := atoi(g[1]), atoi(g[2])
		if a > 12 {
			a, b = b, a
		}
		return dayOf(ref, time.Month(a), b, year(g[3]))
	})
	// Years after a preposition: in 2024, seit 2019, v roce 2023.
	add(digits, `(?:(?:in|since|from|until|by|during|early|late|mid|v roce|od roku|do roku|im jahr|seit|ab)\s+|mid-)(\d{4})`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		y := year(g[1])
		if y <= 0 {
			return time.Time{}, time.Time{}, false
		}
		return yearOf(time.Date(y, 1, 1, 0, 0, 0, 0, ref.Location()))
	})
	// the 14th.
	add(digits, `the\s+(\d{1,2})(?:st|nd|rd|th)`, func(g []string, ref time.Time, future bool) (time.Time, time.Time, bool) {
		return dayOfMonth(ref, atoi(g[1]), future)
	})
	// Days by word: yesterday, zítra, vorgestern, 昨天, 明日, 어제.
	add(either(words(dayWords), cjkText), alt(merge(dayWords, notDays)), func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		n, ok := dayWords[g[0]]
		if !ok {
			return time.Time{}, time.Time{}, false
		}
		return oneDay(ref.AddDate(0, 0, n))
	})
	add(words(map[string]int{"other": 0}), `the other day`, func(_ []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return days(ref.AddDate(0, 0, -7), 7)
	})
	// Weekdays: last Thursday, on Saturday, minulý čtvrtek, v sobotu,
	// letzten Montag, am Freitag.
	for _, wd := range []map[string]time.Weekday{enWeekdays, csWeekdays, deWeekdays} {
		wd := wd
		add(words(wd), `(?:(`+dir+`|on|v|ve|od|do|am|an|seit|bis)\s+)?(`+alt(wd)+`)`, func(g []string, ref time.Time, future bool) (time.Time, time.Time, bool) {
			d, ok := directions[g[1]]
			if !ok {
				d = -1
				if future {
					d = 1
				}
			}
			return weekday(ref, wd[g[2]], d)
		})
	}
	// last week, this month, next year, příští týden, letztes Jahr.
	add(words(periods), `(`+dir+`)\s+(`+alt(periods)+`)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return shift(ref, directions[g[1]], periods[g[2]], true)
	})
	add(words(map[string]int{"before": 0}), `the\s+(week|month|year)\s+before\s+last`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return shift(ref, -2, units[g[1]], true)
	})
	add(words(units), `(?:o|am)\s+(víkendu|wochenende)`, func(_ []string, ref time.Time, future bool) (time.Time, time.Time, bool) {
		n := -1
		if future {
			n = 0
		}
		return shift(ref, n, unitWeekend, true)
	})
	// Counts: two weeks ago, in three days, před dvěma týdny, za týden,
	// vor zwei Wochen, in einer Woche; a count and its unit in one language.
	add(words(map[string]int{"ago": 0}), `(`+alt(enNumbers)+`|\d{1,3})\s+(`+alt(enUnits)+`)\s+ago`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return shift(ref, -number(g[1]), units[g[2]], false)
	})
	for _, c := range []struct {
		in, ago string
		num     map[string]int
		unit    map[string]unit
	}{{"in", "", enNumbers, enUnits}, {"za", "před", csNumbers, csUnits}, {"in", "vor", deNumbers, deUnits}} {
		add(words(c.unit), `(?:`+c.in+`)\s+(`+alt(c.num)+`|\d{1,3})\s+(`+alt(c.unit)+`)(?:['’]s?\s+time)?`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
			return shift(ref, number(g[1]), units[g[2]], false)
		})
		if c.ago == "" {
			continue
		}
		add(words(map[string]int{c.ago: 0}), `(?:`+c.ago+`)\s+(?:(`+alt(c.num)+`|\d{1,3})\s+)?(`+alt(c.unit)+`)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
			n := 1
			if g[1] != "" {
				n = number(g[1])
			}
			return shift(ref, -n, units[g[2]], false)
		})
	}
	add(words(units), `za\s+(týden|měsíc|rok)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return shift(ref, 1, units[g[1]], false)
	})

	cjk()
}

// cjk adds the Chinese, Japanese and Korean patterns.
func cjk() {
	cjkNum := `(\d{1,3}|[一二两兩三四五六七八九十几幾]{1,3}|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열)`
	// 2025年2月6日, 2月6号, 2025년 2월 6일.
	add(cjkText, `(?:(\d{4})\s?[年년]\s?)?(\d{1,2}|[一二三四五六七八九十]{1,3})\s?[月월]\s?(\d{1,2}|[一二三四五六七八九十]{1,3})\s?[日号號일]`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return dayOf(ref, time.Month(cjkNumber(g[2])), cjkNumber(g[3]), year(g[1]))
	})
	// 2025年2月, 2025년 2월.
	add(cjkText, `(\d{4})\s?[年년]\s?(\d{1,2})\s?[月월]`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		return monthRange(ref, time.Month(atoi(g[2])), year(g[1]))
	})
	// 2024年, 2024년.
	add(cjkText, `(\d{4})\s?[年년]`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		y := year(g[1])
		if y <= 0 {
			return time.Time{}, time.Time{}, false
		}
		return yearOf(time.Date(y, 1, 1, 0, 0, 0, 0, ref.Location()))
	})
	// Weeks and weekdays: 上周三, 星期五, 先週の金曜日, 金曜日, 지난주 금요일, 금요일.
	add(cjkText, `(?:([上下这這本])\s?[个個]?)?(?:周|週|星期|礼拜|禮拜)([一二三四五六日天])`, func(g []string, ref time.Time, future bool) (time.Time, time.Time, bool) {
		return cjkWeekday(g[1], g[2], ref, future)
	})
	add(cjkText, `(?:([先来今])週の?)?([月火水木金土日])曜日?`, func(g []string, ref time.Time, future bool) (time.Time, time.Time, bool) {
		return cjkWeekday(g[1], g[2], ref, future)
	})
	add(cjkText, `(?:(지난|다음|이번)\s?주\s?)?([월화수목금토일])요일`, func(g []string, ref time.Time, future bool) (time.Time, time.Time, bool) {
		return cjkWeekday(g[1], g[2], ref, future)
	})
	// 上个月, 先週, 지난달; Czech loni and letos are range words too.
	add(either(words(rangeWords), cjkText), alt(rangeWords), func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		w := rangeWords[g[0]]
		return shift(ref, w.n, w.u, true)
	})
	// Counts: 三天前, 两个星期后, 3日前, 2週間後, 사흘 전, 일주일 후, 두 달 전.
	cjkUnit := `(天|日|个星期|個星期|个礼拜|星期|週間|周|週|个月|個月|ヶ月|か月|カ月|ヵ月|年|일|주|개월|달|년)`
	add(cjkText, cjkNum+`\s?`+cjkUnit+`\s?(前|以前|之前|后|後|以后|以後|之后|전|후|뒤)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		n := cjkNumber(g[1])
		if n <= 0 {
			return time.Time{}, time.Time{}, false
		}
		return shift(ref, n*cjkSign(g[3]), units[g[2]], false)
	})
	add(cjkText, alt(koCounts)+`\s?(전|후|뒤)`, func(g []string, ref time.Time, _ bool) (time.Time, time.Time, bool) {
		for k, c := range koCounts {
			if len(g[0]) > len(k) && g[0][:len(k)] == k {
				return shift(ref, c.n*cjkSign(g[1]), c.u, false)
			}
		}
		return time.Time{}, time.Time{}, false
	})
}

func cjkSign(s string) int {
	switch s {
	case "后", "後", "以后", "以後", "之后", "후", "뒤":
		return 1
	}
	return -1
}

// cjkWeekday resolves a weekday with an optional week word: 上/先/지난 is
// last week's day, 下/来/다음 next week's, 这/本/今/이번 this week's; alone
// the last or next one as the sentence's tense says.
func cjkWeekday(week, day string, ref time.Time, future bool) (time.Time, time.Time, bool) {
	wd, ok := cjkWeekdays[day]
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	if week == "" {
		d := -1
		if future {
			d = 1
		}
		return weekday(ref, wd, d)
	}
	f, _, _ := weekOf(ref.AddDate(0, 0, 7*directions[week]))
	return oneDay(f.AddDate(0, 0, (int(wd)+6)%7))
}

// cjkNumber reads 3, 三, 十二, 二十 or a Korean native number.
func cjkNumber(s string) int {
	if n := atoi(s); n > 0 {
		return n
	}
	if n, ok := numberWords[s]; ok {
		return n
	}
	rs := []rune(s)
	if len(rs) == 2 && rs[1] == '十' { // 二十
		return numberWords[string(rs[0])] * 10
	}
	if len(rs) == 3 && rs[1] == '十' { // 二十三
		return numberWords[string(rs[0])]*10 + numberWords[string(rs[2])]
	}
	return 0
}

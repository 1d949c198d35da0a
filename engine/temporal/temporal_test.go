package temporal

import (
	"strings"
	"testing"
	"time"
)

// ref is the moment every table case is said: Monday 10 February 2025,
// 20:00 UTC. Thursday before it is the 6th, Friday after it the 14th.
var ref = time.Date(2025, 2, 10, 20, 0, 0, 0, time.UTC)

// findCase is a text and what Find makes of it: each span as
// "text=day", joined by "; ". Empty want: nothing is found.
type findCase struct{ text, want string }

func render(spans []Span) string {
	parts := make([]string, len(spans))
	for i, s := range spans {
		parts[i] = s.Text + "=" + s.Day()
	}
	return strings.Join(parts, "; ")
}

var enCases = []findCase{
	{"I saw her yesterday.", "yesterday=2025-02-09"},
	{"We met today at noon.", "today=2025-02-10"},
	{"I'll call you tomorrow.", "tomorrow=2025-02-11"},
	{"The day before yesterday was cold.", "The day before yesterday=2025-02-08"},
	{"We were out late last night.", "last night=2025-02-09"},
	{"Last Thursday we went out.", "Last Thursday=2025-02-06"},
	// "next Friday" said on a Monday is the coming Friday, not the one after.
	{"Next Friday is the party.", "Next Friday=2025-02-14"},
	{"This Wednesday I am free.", "This Wednesday=2025-02-12"},
	{"This Monday is a holiday.", "This Monday=2025-02-10"},
	{"We saw it this past Monday.", "this past Monday=2025-02-03"},
	// Bare weekdays: the last one in a sentence about the past, the next one
	// in a sentence about the future.
	{"I went to the cinema on Saturday.", "on Saturday=2025-02-08"},
	{"I will go to the cinema on Saturday.", "on Saturday=2025-02-15"},
	{"We're going to the zoo on Saturday.", "on Saturday=2025-02-15"},
	{"I booked a table for Friday.", "Friday=2025-02-14"},
	{"Someone's coming on Thursday.", "on Thursday=2025-02-13"},
	{"Someone’s coming on Thursday.", "on Thursday=2025-02-13"}, // typographic apostrophe
	{"We'll meet on Thursday.", "on Thursday=2025-02-13"},
	// A bare weekday equal to the reference's goes back (or ahead) a whole
	// week: said on a Monday, the Monday itself would be "today".
	{"On Monday it rained.", "On Monday=2025-02-03"},
	{"I will see you on Monday.", "on Monday=2025-02-17"},
	{"Last week was busy.", "Last week=2025-02-03..2025-02-09"},
	{"We move next month.", "next month=2025-03-01..2025-03-31"},
	{"This year is good.", "This year=2025-01-01..2025-12-31"},
	{"Last year was bad.", "Last year=2024-01-01..2024-12-31"},
	{"We hiked last weekend.", "last weekend=2025-02-08..2025-02-09"},
	{"Are you free this weekend?", "this weekend=2025-02-15..2025-02-16"},
	{"It happened the week before last.", "the week before last=2025-01-27..2025-02-02"},
	{"I saw him the other day.", "the other day=2025-02-03..2025-02-09"},
	// Counts resolve to the day they point at.
	{"She left two weeks ago.", "two weeks ago=2025-01-27"},
	{"He called 3 days ago.", "3 days ago=2025-02-07"},
	{"A few days ago it snowed.", "A few days ago=2025-02-07"},
	{"We spoke a week ago.", "a week ago=2025-02-03"},
	{"They married 2 years ago.", "2 years ago=2023-02-10"},
	{"I'll be back in 2 weeks.", "in 2 weeks=2025-02-24"},
	{"It is due in three weeks' time.", "in three weeks' time=2025-03-03"},
	{"The results come in a month.", "in a month=2025-03-10"},
	// Explicit dates.
	{"We met on 6 February 2025.", "6 February 2025=2025-02-06"},
	{"We met on February 6, 2025.", "February 6, 2025=2025-02-06"},
	{"Deadline: Feb. 6th.", "Feb. 6th=2025-02-06"},
	{"Her party is on the 6th of Feb.", "6th of Feb=2025-02-06"},
	{"Flight on 6 Feb. 2025 at noon.", "6 Feb. 2025=2025-02-06"},
	{"The log says 2025-02-06.", "2025-02-06=2025-02-06"},
	{"Signed 2/6/2025.", "2/6/2025=2025-02-06"},
	{"Signed 13/2/2025.", "13/2/2025=2025-02-13"},
	// "the 14th" alone: the past one in a past sentence (January's, since
	// February's has not come yet), the coming one in a future sentence.
	{"We met on the 14th.", "the 14th=2025-01-14"},
	{"I will pay on the 14th.", "the 14th=2025-02-14"},
	// The longest of overlapping matches wins: "the 14th" loses to "14th of
	// March", "in May" to "May 2024", "since May" to "May 5, 2024".
	{"We met on the 14th of March.", "14th of March=2025-03-14"},
	{"We moved in May 2024.", "May 2024=2024-05-01..2024-05-31"},
	{"I've lived here since May 5, 2024.", "May 5, 2024=2024-05-05"},
	// A month without a year is the nearest one.
	{"We go skiing in March.", "in March=2025-03-01..2025-03-31"},
	{"We went skiing in December.", "in December=2024-12-01..2024-12-31"},
	{"Exams are in mid-August.", "mid-August=2025-08-01..2025-08-31"},
	{"We left in September.", "in September=2024-09-01..2024-09-30"},
	{"We moved in 2024.", "in 2024=2024-01-01..2024-12-31"},
	{"Prices rose in mid-2024.", "mid-2024=2024-01-01..2024-12-31"},
	{"Yesterday I booked flights for next Friday.", "Yesterday=2025-02-09; next Friday=2025-02-14"},
	// Hyphens are word boundaries, which "a Monday-morning meeting" needs; so
	// "sunday-best" reads as a Sunday, as "Sunday best" must anyway.
	{"We have a Monday-morning meeting.", "Monday=2025-02-03"},
	{"She wore her sunday-best.", "sunday=2025-02-09"},
	// Nothing.
	{"We may go.", ""},
	{"Mondays are hard.", ""},
	{"I met the mayor.", ""},
	{"I have 3 cats.", ""},
	{"It costs 2000 euros.", ""},
	{"Upgrade to version 1.2.3 first.", ""},
	{"The fox lives in a den.", ""},     // "den" is a Czech day, not with an English count
	{"Pushed the last tag.", ""},        // "tag" is a German day, not with an English direction
	{"Put it in a tag.", ""},            //
	{"The next day we left.", ""},       // the day after a story's event, not tomorrow
	{"It was the last day.", ""},        // ends something, not yesterday
	{"In the last weeks we hiked.", ""}, // a stretch, not last week
	{"Born 1800-02-06.", ""},            // out of range years are no dates
	{"It was 6 February 1850.", ""},     //
	{"Feb 29 is a leap day.", ""},       // 2025 has none
	{"", ""},
}

var csCases = []findCase{
	{"Včera jsem byl doma.", "Včera=2025-02-09"},
	{"Dnes je hezky.", "Dnes=2025-02-10"},
	{"Zítra jedu do Brna.", "Zítra=2025-02-11"},
	{"Předevčírem pršelo.", "Předevčírem=2025-02-08"},
	{"Minulý čtvrtek jsme byli v kině.", "Minulý čtvrtek=2025-02-06"},
	{"Příští pátek máme večírek.", "Příští pátek=2025-02-14"},
	{"V sobotu jsme byli v kině.", "V sobotu=2025-02-08"},
	{"V sobotu budu v kině.", "V sobotu=2025-02-15"},
	{"Nebudu tam v pátek.", "v pátek=2025-02-14"},
	// "příští" marks the future for the bare weekday too.
	{"V pátek přijede a příští úterý odjede.", "V pátek=2025-02-14; příští úterý=2025-02-11"},
	{"V pondělí jsem byl nemocný.", "V pondělí=2025-02-03"},
	{"Minulý týden bylo hezky.", "Minulý týden=2025-02-03..2025-02-09"},
	{"Tento týden mám volno.", "Tento týden=2025-02-10..2025-02-16"},
	{"Příští měsíc se stěhujeme.", "Příští měsíc=2025-03-01..2025-03-31"},
	{"Minulý rok byl těžký.", "Minulý rok=2024-01-01..2024-12-31"},
	{"Loni jsme byli v Itálii.", "Loni=2024-01-01..2024-12-31"},
	{"Letos jedeme k moři.", "Letos=2025-01-01..2025-12-31"},
	{"O víkendu jsme byli na chatě.", "O víkendu=2025-02-08..2025-02-09"},
	{"Byli jsme tam před dvěma týdny.", "před dvěma týdny=2025-01-27"},
	{"Před třemi dny volala.", "Před třemi dny=2025-02-07"},
	{"Před rokem jsme se vzali.", "Před rokem=2024-02-10"},
	{"Přijede za týden.", "za týden=2025-02-17"},
	{"Za dva dny odjíždím.", "Za dva dny=2025-02-12"},
	{"Potkali jsme se 6. února 2025.", "6. února 2025=2025-02-06"},
	{"Potkali jsme se 6.2.2025.", "6.2.2025=2025-02-06"},
	{"Potkali jsme se 6. 2. 2025.", "6. 2. 2025=2025-02-06"},
	{"Potkali jsme se 6.2.25.", "6.2.25=2025-02-06"},
	{"V březnu pojedeme na hory.", "V březnu=2025-03-01..2025-03-31"},
	{"V únoru 2024 jsme se stěhovali.", "únoru 2024=2024-02-01..2024-02-29"},
	{"V roce 2023 jsme se přestěhovali.", "V roce 2023=2023-01-01..2023-12-31"},
	{"Mám tři kočky.", ""},
	{"Stojí to 2000 korun.", ""},
	{"Kdo je Jana?", ""},
}

var deCases = []findCase{
	{"Gestern war ich zu Hause.", "Gestern=2025-02-09"},
	{"Heute ist es schön.", "Heute=2025-02-10"},
	{"Morgen fahre ich nach Berlin.", "Morgen=2025-02-11"},
	{"Vorgestern hat es geregnet.", "Vorgestern=2025-02-08"},
	{"Übermorgen kommt sie.", "Übermorgen=2025-02-12"},
	{"Heute Morgen war es kalt.", "Heute Morgen=2025-02-10"},
	{"Diesen Morgen war es kalt.", "Diesen Morgen=2025-02-10"},
	{"Letzten Donnerstag waren wir im Kino.", "Letzten Donnerstag=2025-02-06"},
	{"Nächsten Freitag ist die Party.", "Nächsten Freitag=2025-02-14"},
	{"Diesen Mittwoch habe ich frei.", "Diesen Mittwoch=2025-02-12"},
	{"Am Samstag waren wir im Kino.", "Am Samstag=2025-02-08"},
	{"Am Samstag werde ich ins Kino gehen.", "Am Samstag=2025-02-15"},
	// "morgen" marks the future; "gestern Morgen" is a morning that passed.
	{"Ich komme morgen, am Samstag bin ich weg.", "morgen=2025-02-11; am Samstag=2025-02-15"},
	{"Gestern Morgen war es kalt, am Freitag auch.", "Gestern Morgen=2025-02-09; am Freitag=2025-02-07"},
	{"Letzte Woche war viel los.", "Letzte Woche=2025-02-03..2025-02-09"},
	{"Nächsten Monat ziehen wir um.", "Nächsten Monat=2025-03-01..2025-03-31"},
	{"Letztes Jahr war schlecht.", "Letztes Jahr=2024-01-01..2024-12-31"},
	{"Am Wochenende waren wir am See.", "Am Wochenende=2025-02-08..2025-02-09"},
	{"Vor zwei Wochen waren wir dort.", "Vor zwei Wochen=2025-01-27"},
	{"Vor drei Tagen rief sie an.", "Vor drei Tagen=2025-02-07"},
	{"Vor einem Jahr haben wir geheiratet.", "Vor einem Jahr=2024-02-10"},
	{"In einer Woche kommt er.", "In einer Woche=2025-02-17"},
	{"In drei Tagen fahre ich.", "In drei Tagen=2025-02-13"},
	{"Am 6. Februar 2025 trafen wir uns.", "6. Februar 2025=2025-02-06"},
	{"Wir trafen uns am 6.2.2025.", "6.2.2025=2025-02-06"},
	{"Im März fahren wir in die Berge.", "Im März=2025-03-01..2025-03-31"},
	{"Im Mai 2024 zogen wir um.", "Mai 2024=2024-05-01..2024-05-31"},
	{"Im Jahr 2023 sind wir umgezogen.", "Im Jahr 2023=2023-01-01..2023-12-31"},
	{"Seit 2019 wohne ich hier.", "Seit 2019=2019-01-01..2019-12-31"},
	{"Guten Morgen!", ""},                       // a greeting, not tomorrow
	{"Am Morgen war es kalt.", ""},              // a morning of any day
	{"In den letzten Jahren war es ruhig.", ""}, // a stretch, not last year
	{"Ich habe drei Katzen.", ""},
	{"Das kostet 2000 Euro.", ""},
}

var zhCases = []findCase{
	{"我昨天在家。", "昨天=2025-02-09"},
	{"今天很好。", "今天=2025-02-10"},
	{"明天我去北京。", "明天=2025-02-11"},
	{"前天下雨了。", "前天=2025-02-08"},
	{"大前天下雨了。", "大前天=2025-02-07"},
	{"后天她来。", "后天=2025-02-12"},
	{"上周四我们去看电影了。", "上周四=2025-02-06"},
	// 下周五 is Friday of next week, not the coming Friday.
	{"下周五有聚会。", "下周五=2025-02-21"},
	{"这周三我有空。", "这周三=2025-02-12"},
	{"星期六我们去看电影了。", "星期六=2025-02-08"},
	{"星期六我会去看电影。", "星期六=2025-02-15"},
	{"星期六我要去看电影。", "星期六=2025-02-15"},
	{"星期六我打算去看电影。", "星期六=2025-02-15"},
	{"上周很忙。", "上周=2025-02-03..2025-02-09"},
	{"这个星期很忙。", "这个星期=2025-02-10..2025-02-16"},
	{"上个月很忙。", "上个月=2025-01-01..2025-01-31"},
	{"下个月我们搬家。", "下个月=2025-03-01..2025-03-31"},
	{"去年很糟。", "去年=2024-01-01..2024-12-31"},
	{"今年很好。", "今年=2025-01-01..2025-12-31"},
	{"三天前她打电话了。", "三天前=2025-02-07"},
	{"二十天前她走了。", "二十天前=2025-01-21"},
	{"两个星期后他来。", "两个星期后=2025-02-24"},
	{"2025年2月6日我们见面了。", "2025年2月6日=2025-02-06"},
	{"2月6日我们见面了。", "2月6日=2025-02-06"},
	{"2025年3月我们去山里。", "2025年3月=2025-03-01..2025-03-31"},
	{"2024年我们搬家了。", "2024年=2024-01-01..2024-12-31"},
	{"我有三只猫。", ""},
	{"这要2000欧元。", ""},
	{"玛拉的狗叫什么名字?", ""},
}

var jaCases = []findCase{
	{"今日は家にいた。", "今日=2025-02-10"},
	{"昨日は雨だった。", "昨日=2025-02-09"},
	{"明日東京に行く。", "明日=2025-02-11"},
	{"一昨日は雨だった。", "一昨日=2025-02-08"},
	{"明後日に来る。", "明後日=2025-02-12"},
	{"先週の木曜日に映画を見た。", "先週の木曜日=2025-02-06"},
	{"来週の月曜日に会議がある。", "来週の月曜日=2025-02-17"},
	{"今週の水曜日は暇です。", "今週の水曜日=2025-02-12"},
	{"金曜日に東京へ行きました。", "金曜日=2025-02-07"},
	{"金曜日に東京へ行く予定です。", "金曜日=2025-02-14"},
	{"先週は忙しかった。", "先週=2025-02-03..2025-02-09"},
	{"先月は忙しかった。", "先月=2025-01-01..2025-01-31"},
	{"来月引っ越す。", "来月=2025-03-01..2025-03-31"},
	{"昨年は大変だった。", "昨年=2024-01-01..2024-12-31"},
	{"今年は良い。", "今年=2025-01-01..2025-12-31"},
	{"3日前に電話があった。", "3日前=2025-02-07"},
	{"三日前に電話があった。", "三日前=2025-02-07"},
	{"2週間後に来る。", "2週間後=2025-02-24"},
	{"2ヶ月前に会った。", "2ヶ月前=2024-12-10"},
	{"2025年2月6日に会った。", "2025年2月6日=2025-02-06"},
	{"2月6日に会った。", "2月6日=2025-02-06"},
	{"2025年3月に山へ行く。", "2025年3月=2025-03-01..2025-03-31"},
	{"2024年に引っ越した。", "2024年=2024-01-01..2024-12-31"},
	{"猫を3匹飼っています。", ""},
	{"マラの犬の名前は何ですか?", ""},
}

var koCases = []findCase{
	{"오늘 날씨가 좋다.", "오늘=2025-02-10"},
	{"어제 집에 있었다.", "어제=2025-02-09"},
	{"내일 서울에 간다.", "내일=2025-02-11"},
	{"그저께 비가 왔다.", "그저께=2025-02-08"},
	{"모레 그녀가 온다.", "모레=2025-02-12"},
	{"지난주 목요일에 영화를 봤다.", "지난주 목요일=2025-02-06"},
	{"다음 주 월요일에 회의가 있다.", "다음 주 월요일=2025-02-17"},
	{"이번 주 수요일은 한가하다.", "이번 주 수요일=2025-02-12"},
	{"금요일에 부산에 갔어요.", "금요일=2025-02-07"},
	{"금요일에 부산에 갈 예정이에요.", "금요일=2025-02-14"},
	{"지난주는 바빴다.", "지난주=2025-02-03..2025-02-09"},
	{"다음 달에 이사한다.", "다음 달=2025-03-01..2025-03-31"},
	{"지난달은 바빴다.", "지난달=2025-01-01..2025-01-31"},
	{"작년은 힘들었다.", "작년=2024-01-01..2024-12-31"},
	{"올해는 좋다.", "올해=2025-01-01..2025-12-31"},
	{"내년에 결혼한다.", "내년=2026-01-01..2026-12-31"},
	{"사흘 전에 전화가 왔다.", "사흘 전=2025-02-07"},
	{"일주일 후에 온다.", "일주일 후=2025-02-17"},
	{"두 달 전에 만났다.", "두 달 전=2024-12-10"},
	{"3일 전에 만났다.", "3일 전=2025-02-07"},
	{"2025년 2월 6일에 만났다.", "2025년 2월 6일=2025-02-06"},
	{"2월 6일에 만났다.", "2월 6일=2025-02-06"},
	{"2025년 3월에 간다.", "2025년 3월=2025-03-01..2025-03-31"},
	{"2024년에 이사했다.", "2024년=2024-01-01..2024-12-31"},
	{"고양이 세 마리가 있어요.", ""},
	{"2000원이에요.", ""},
}

var allCases = map[string][]findCase{"en": enCases, "cs": csCases, "de": deCases, "zh": zhCases, "ja": jaCases, "ko": koCases}

func TestFind(t *testing.T) {
	for lang, cases := range allCases {
		t.Run(lang, func(t *testing.T) {
			if len(cases) < 12 {
				t.Errorf("%d cases, want at least 12", len(cases))
			}
			for _, c := range cases {
				checkFind(t, c)
			}
		})
	}
}

// Overlapping rules yield one span: "last Thursday" is not also "Thursday".
func TestFindOneSpanPerExpression(t *testing.T) {
	for _, text := range []string{"last Thursday", "the day before yesterday", "heute Morgen", "上周四", "先週の木曜日",
		"지난주 목요일", "6 February 2025", "2025年2月6日", "in three weeks' time", "this past Monday"} {
		if spans := Find(text, ref); len(spans) != 1 || spans[0].Text != text {
			t.Errorf("Find(%q) = %q, want the whole text as one span", text, render(spans))
		}
	}
}

func TestFindNothing(t *testing.T) {
	for _, text := range []string{"", " ", "\n\t", "\xff\xfe\xfd", "hello world", "12345", "。。。", strings.Repeat("\x80", 100)} {
		if spans := Find(text, ref); len(spans) != 0 {
			t.Errorf("Find(%q) = %q, want nothing", text, render(spans))
		}
	}
}

// Offsets are offsets into the input even around invalid UTF-8 and
// letters whose lower case is longer or shorter ("İ").
func TestFindOffsetsInInput(t *testing.T) {
	for _, c := range []findCase{
		{"a\xffYesterday \xfe\xfe tomorrow", "Yesterday=2025-02-09; tomorrow=2025-02-11"},
		{"İstanbul was cold Yesterday.", "Yesterday=2025-02-09"},
		{"\xe2\x82 LAST THURSDAY", "LAST THURSDAY=2025-02-06"},
		{"Über Ostern, Vor zwei Wochen", "Vor zwei Wochen=2025-01-27"},
	} {
		checkFind(t, c)
	}
}

// checkFind checks Find's spans for a case, and that each span's offsets
// read its text in the input.
func checkFind(t *testing.T, c findCase) {
	t.Helper()
	spans := Find(c.text, ref)
	if got := render(spans); got != c.want {
		t.Errorf("Find(%q) = %q, want %q", c.text, got, c.want)
	}
	for _, s := range spans {
		if c.text[s.Start:s.End] != s.Text {
			t.Errorf("Find(%q): span %q at [%d,%d) reads %q", c.text, s.Text, s.Start, s.End, c.text[s.Start:s.End])
		}
	}
}

// Only MaxText bytes are scanned: a long text costs what its head costs,
// and an expression past the head is not found.
func TestFindLongText(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 4000) // ~108 KB
	if spans := Find(filler+"yesterday", ref); len(spans) != 0 {
		t.Errorf("found %q past MaxText", render(spans))
	}
	if got := render(Find("yesterday "+filler, ref)); got != "yesterday=2025-02-09" {
		t.Errorf("Find(head + filler) = %q", got)
	}
	// A text full of expressions: the spans stay within MaxText.
	dense := strings.Repeat("today 2025-02-06 last Thursday 三天前 ", 3000)
	start := time.Now()
	spans := Find(dense, ref)
	if len(spans) == 0 || spans[len(spans)-1].End > MaxText {
		t.Errorf("dense text: %d spans, last ends at %d", len(spans), spans[len(spans)-1].End)
	}
	// Generous (race detector, loaded machines); the scan is a few ms.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Find over %d bytes took %v", len(dense), d)
	}
	// Cut inside a multi-byte character: no panic, nothing beyond the cut.
	cut := strings.Repeat("a", MaxText-1) + "昨天"
	if spans := Find(cut, ref); len(spans) != 0 {
		t.Errorf("Find(cut) = %q", render(spans))
	}
}

// Resolution is to whole days in the reference's location.
func TestFindLocation(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	// 2025-02-10 01:00 in Tokyo is 2025-02-09 16:00 UTC.
	r := time.Date(2025, 2, 10, 1, 0, 0, 0, tokyo)
	spans := Find("昨日は雨だった。yesterday", r)
	if got := render(spans); got != "昨日=2025-02-09; yesterday=2025-02-09" {
		t.Fatalf("Find = %q", got)
	}
	if s := spans[0]; !s.From.Equal(time.Date(2025, 2, 9, 0, 0, 0, 0, tokyo)) || !s.To.Equal(time.Date(2025, 2, 10, 0, 0, 0, 0, tokyo)) {
		t.Errorf("span = [%v, %v), want the Tokyo day", s.From, s.To)
	}
}

// Month and year edges: January's "last month" is December of the year
// before, "the 31st" in a past sentence is the last month that has one.
func TestFindCalendarEdges(t *testing.T) {
	jan := time.Date(2025, 1, 3, 12, 0, 0, 0, time.UTC) // a Friday
	for _, c := range []findCase{
		{"last month", "last month=2024-12-01..2024-12-31"},
		{"next month", "next month=2025-02-01..2025-02-28"},
		{"last week", "last week=2024-12-23..2024-12-29"},
		{"yesterday", "yesterday=2025-01-02"},
		{"two months ago", "two months ago=2024-11-03"},
		{"we met on the 31st", "the 31st=2024-12-31"},
		{"in December", "in December=2024-12-01..2024-12-31"},
		{"on Friday it snowed", "on Friday=2024-12-27"},
	} {
		if got := render(Find(c.text, jan)); got != c.want {
			t.Errorf("Find(%q) on 3 January = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestFindAnyAtAll(t *testing.T) {
	has := func(text string) bool { return len(Find(text, ref)) > 0 }
	if !has("see you tomorrow") || !has("昨天") || has("see you") || has("") {
		t.Error("a temporal expression missed or invented")
	}
}

func TestSpanDayAndOverlaps(t *testing.T) {
	d := func(day int) time.Time { return time.Date(2025, 2, day, 0, 0, 0, 0, time.UTC) }
	one := Span{From: d(6), To: d(7)}
	week := Span{From: d(3), To: d(10)}
	if one.Day() != "2025-02-06" || week.Day() != "2025-02-03..2025-02-09" {
		t.Errorf("Day = %q, %q", one.Day(), week.Day())
	}
	if !one.Overlaps(week.From, week.To) || !week.Overlaps(d(9), d(12)) || week.Overlaps(d(10), d(11)) || one.Overlaps(d(7), d(8)) {
		t.Error("Overlaps: ranges are half open")
	}
}

// A gate only saves work: where it stays closed, its pattern has no match
// Find would keep.
func checkGatesHideNoMatch(t *testing.T, text string) {
	t.Helper()
	lower := lowerInPlace(truncate(text, MaxText))
	f := scan(lower)
	for i, r := range rules {
		if r.gate(f) {
			continue
		}
		for _, m := range r.re.FindAllStringIndex(lower, -1) {
			if m[0] < m[1] && wordEdge(lower, m[0], m[1]) {
				t.Fatalf("rule %d (%s): its gate is closed on %q, which it matches at %q", i, r.re, text, lower[m[0]:m[1]])
			}
		}
	}
}

func TestGatesHideNoMatch(t *testing.T) {
	n := 0
	for _, cases := range allCases {
		for _, c := range cases {
			checkGatesHideNoMatch(t, c.text)
			n++
		}
	}
	checkGatesHideNoMatch(t, temporalSentence)
	if n < 50 {
		t.Fatalf("only %d cases", n)
	}
}

// The gate keeps the common case cheap: a sentence with no temporal word,
// digit or CJK character runs no pattern at all.
func TestGateSkipsPlainText(t *testing.T) {
	f := scan(strings.ToLower(plainSentence))
	for i, r := range rules {
		if r.gate(f) {
			t.Errorf("rule %d (%s) passes its gate on the plain sentence", i, r.re)
		}
	}
	f = scan(strings.ToLower(temporalSentence))
	n := 0
	for _, r := range rules {
		if r.gate(f) {
			n++
		}
	}
	if n == 0 || n == len(rules) {
		t.Errorf("%d of %d rules pass their gates on the temporal sentence", n, len(rules))
	}
}

// Two typical sentences of about 200 characters: one without a temporal
// word, digit or CJK character (most memories and questions), one with
// three expressions.
const (
	plainSentence = "The quarterly report covers revenue, hiring plans and the new office layout; Mara wants " +
		"the design team to review the colour palette while Dev asked for a shorter summary the board can read quickly."
	temporalSentence = "Mara said last Thursday that the quarterly report covers revenue and hiring plans; Dev will " +
		"send the shorter summary in two weeks, and the board meets again on the 14th to review the office layout."
)

func BenchmarkFind(b *testing.B) {
	for _, bc := range []struct{ name, text string }{{"plain", plainSentence}, {"temporal", temporalSentence}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				Find(bc.text, ref)
			}
		})
	}
}

func TestFindSkipsHabitualAndNonFutureNext(t *testing.T) {
	ref := time.Date(2025, 2, 10, 20, 0, 0, 0, time.UTC)
	if got := Find("Our team retro happens on the last Friday of each month", ref); len(got) != 0 {
		t.Errorf("habitual day resolved: %+v", got)
	}
	// "next to" speaks of a place, not the future: the bare weekday stays past.
	got := Find("On Saturday we sat next to the stage", ref)
	if len(got) != 1 || got[0].Day() != "2025-02-08" {
		t.Errorf("got %+v, want Saturday 2025-02-08", got)
	}
	// 开会 (a meeting) is not the future marker 会.
	got = Find("我们星期五开会了", ref)
	if len(got) != 1 || got[0].Day() != "2025-02-07" {
		t.Errorf("got %+v, want Friday 2025-02-07", got)
	}
}

package distill

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

func TestParseLessons(t *testing.T) {
	one := `{"lessons":[{"category":"decision","importance":0.8,"text":"Use WAL.","evidence":[{"message_ids":[3],"quote":"use WAL"}],"tags":["sqlite"],"keywords":["WAL"],"keywords_zh":["日志"]}]}`
	wantOne := []Lesson{{Category: schemas.CategoryDecision, Importance: 0.8, Text: "Use WAL.",
		Evidence: []Evidence{{MessageIDs: []int{3}, Quote: "use WAL"}}, Tags: []string{"sqlite"}, Keywords: []string{"WAL"}, KeywordsZh: []string{"日志"}}}
	long := strings.Repeat("é", 600)
	cases := []struct {
		name string
		in   string
		want []Lesson
		bad  bool
	}{
		{name: "plain", in: one, want: wantOne},
		{name: "fenced", in: "```json\n" + one + "\n```", want: wantOne},
		{name: "fenced without language, with prose", in: "Sure! Here you go:\n```\n" + one + "\n```\nHope this helps.", want: wantOne},
		{name: "bare array", in: `[{"text":"Use WAL.","category":"decision","importance":0.8,"evidence":[{"message_ids":[3],"quote":"use WAL"}],"tags":["sqlite"],"keywords":["WAL"],"keywords_zh":["日志"]}]`, want: wantOne},
		{name: "empty list", in: `{"lessons":[]}`, want: []Lesson{}},
		{name: "null list", in: `{"lessons":null}`, want: []Lesson{}},
		{name: "malformed", in: `{"lessons":[{"text":"cut off`, bad: true},
		{name: "prose only", in: "I could not find any lessons.", bad: true},
		{name: "no lessons member", in: `{"memories":[]}`, bad: true},
		{name: "lessons not an array", in: `{"lessons":"none"}`, bad: true},
		{name: "trailing garbage", in: one + " and more", bad: true},
		{name: "a string", in: `"lessons"`, bad: true},
		{
			name: "wrong types are forgiven",
			in: `{"lessons":[
				{"category":7,"importance":"0.9","text":"  Spaces   collapse\n here ","evidence":[{"message_ids":"U12","quote":" q1 "},{"message_ids":["A13",14.0,"#15","[U16]","x",-1,2.5],"quote":"q2"},"junk",{"message_ids":[1]}],"tags":"one","keywords":["a",1,"A","b"],"keywordsZh":["中"]},
				"not an object",
				{"text":""},
				{"text":42},
				{"category":"Preferences","importance":7,"text":"t2","evidence":[{"message_id":4,"quote":"q"}]},
				{"category":"made-up","importance":-3,"text":"t3","evidence":null},
				{"category":"FACT","importance":null,"text":"t4"}
			]}`,
			want: []Lesson{
				{Category: schemas.CategoryReflection, Importance: 0.9, Text: "Spaces collapse here",
					Evidence: []Evidence{{MessageIDs: []int{12}, Quote: "q1"}, {MessageIDs: []int{13, 14, 15, 16}, Quote: "q2"}},
					Tags:     []string{"one"}, Keywords: []string{"a", "b"}, KeywordsZh: []string{"中"}},
				{Category: schemas.CategoryPreference, Importance: 1, Text: "t2", Evidence: []Evidence{{MessageIDs: []int{4}, Quote: "q"}}},
				{Category: schemas.CategoryReflection, Importance: 0, Text: "t3"},
				{Category: schemas.CategoryFact, Importance: schemas.DefaultImportance, Text: "t4"},
			},
		},
		{
			name: "over-long text is cut",
			in:   `{"lessons":[{"text":"` + long + `","evidence":[{"message_ids":[1],"quote":"` + long + `"}]}]}`,
			want: []Lesson{{Category: schemas.CategoryReflection, Importance: schemas.DefaultImportance, Text: strings.Repeat("é", MaxLessonChars-1) + "…",
				Evidence: []Evidence{{MessageIDs: []int{1}, Quote: strings.Repeat("é", maxQuoteChars)}}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseLessons(c.in)
			if c.bad {
				if !errors.Is(err, ErrMalformedOutput) {
					t.Fatalf("err = %v, want ErrMalformedOutput (got %+v)", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestMapCategory(t *testing.T) {
	cases := map[string]schemas.Category{
		"preference": schemas.CategoryPreference, " Decision ": schemas.CategoryDecision, "decisions": schemas.CategoryDecision,
		"knowledge": schemas.CategoryFact, "people": schemas.CategoryEntity, "entities": schemas.CategoryEntity,
		"pitfall": schemas.CategoryReflection, "other": schemas.CategoryOther, "": schemas.CategoryReflection, "???": schemas.CategoryReflection,
	}
	for in, want := range cases {
		if got := mapCategory(in); got != want {
			t.Errorf("mapCategory(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSchemaForms(t *testing.T) {
	s := LessonsSchema()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	lesson := m["properties"].(map[string]any)["lessons"].(map[string]any)["items"].(map[string]any)
	if lesson["additionalProperties"] != false || len(lesson["required"].([]any)) != 7 {
		t.Errorf("lesson schema %v", lesson)
	}
	g := s.genai()
	gl := g.Properties["lessons"].Items
	if g.Type != "OBJECT" || gl.Type != "OBJECT" || gl.PropertyOrdering[2] != "text" || *gl.Properties["importance"].Maximum != 1 {
		t.Errorf("genai schema %+v", gl)
	}
}

func FuzzParseLessons(f *testing.F) {
	f.Add(`{"lessons":[{"category":"fact","importance":0.5,"text":"x","evidence":[{"message_ids":[1],"quote":"abc"}]}]}`)
	f.Add("```json\n{\"lessons\":[]}\n```")
	f.Add(`[{"text":"t","evidence":[{"message_ids":["U1"],"quote":"q"}],"importance":"1e400"}]`)
	f.Add(`{"lessons":[{"text":"` + strings.Repeat("字", MaxLessonChars+1) + `"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		ls, err := ParseLessons(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedOutput) {
				t.Fatalf("error not ErrMalformedOutput: %v", err)
			}
			return
		}
		for _, l := range ls {
			if !l.Category.Valid() || l.Importance < 0 || l.Importance > 1 || l.Text == "" || utf8.RuneCountInString(l.Text) > MaxLessonChars {
				t.Fatalf("bad lesson %+v", l)
			}
			for _, e := range l.Evidence {
				if e.Quote == "" || len(e.MessageIDs) == 0 || len(e.MessageIDs) > maxIDsPerEvidence {
					t.Fatalf("bad evidence %+v", e)
				}
				for _, id := range e.MessageIDs {
					if id < 1 {
						t.Fatalf("bad message id %d", id)
					}
				}
			}
			if len(l.Keywords) > maxListItems || len(l.Tags) > maxListItems || len(l.KeywordsZh) > maxListItems {
				t.Fatalf("lists too long: %+v", l)
			}
		}
	})
}

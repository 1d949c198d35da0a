package fts

import (
	"slices"
	"testing"
)

func TestQueryTermsDropStopWords(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"What is the name of my dog?", []string{"name", "dog"}},
		{"When did Ana move to Porto?", []string{"ana", "move", "porto"}},
		{"Kde bydlí moje sestra?", []string{"bydlí", "sestra"}},
		{"Wo wohnt meine Schwester?", []string{"wohnt", "schwester"}},
		{"我的狗叫什么名字", []string{"的狗", "狗叫", "叫什", "么名", "名字"}}, // "我的", "什么" dropped
		{"what is it", []string{"what", "is", "it"}},         // nothing else to search for: kept
		{"the JINA_API_KEY variable", []string{"jina_api_key", "variable"}},
	}
	for _, tt := range tests {
		if got := QueryTerms(tt.query); !slices.Equal(got, tt.want) {
			t.Errorf("QueryTerms(%q) = %q, want %q", tt.query, got, tt.want)
		}
	}
	if IsStopWord("porto") || !IsStopWord("我的") || !IsStopWord("是我") || IsStopWord("名字") {
		t.Error("IsStopWord")
	}
}

package watcher

import (
	"database/sql"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"

	"github.com/clawmem/clawmem/distill"
)

// FuzzRowLine: any event_json or event_zstd content parses to a line or a
// clear error, never a panic, and a message line's text is valid UTF-8.
func FuzzRowLine(f *testing.F) {
	enc, _ := zstd.NewWriter(nil)
	msg := `{"type":"message","id":"e4067ebd","message":{"role":"user","content":"I prefer tea","timestamp":1796272661232}}`
	f.Add(msg, []byte(nil), true)
	f.Add("", enc.EncodeAll([]byte(msg), nil), false)
	f.Add(`{"type":"reset","id":"a64a426c","reason":"new"}`, []byte(nil), true)
	f.Add("{not json", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00}, false)
	f.Add("\xff\xfe", []byte(nil), true)
	f.Fuzz(func(t *testing.T, js string, z []byte, valid bool) {
		l, err := rowLine(sql.NullString{String: js, Valid: valid}, z)
		if err != nil {
			return
		}
		if l.Kind == distill.KindMessage && (!utf8.ValidString(l.Text) || (l.Role != "user" && l.Role != "assistant")) {
			t.Fatalf("line %+v", l)
		}
	})
}

func FuzzCheckSessionID(f *testing.F) {
	for _, s := range []string{"80a2cfe9-01bd-4ccc-bb86-2ee8b0d5f072", "", "a.b", "\xff", "x\x00y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if checkSessionID(id) == nil && (id == "" || !utf8.ValidString(id) || len(id) > 256) {
			t.Fatalf("%q accepted", id)
		}
	})
}

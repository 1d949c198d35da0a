package httpapi

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

// FuzzFromParams: any query string either fills a request whose fields
// hold what the parameters said, or is refused; it never panics.
func FuzzFromParams(f *testing.F) {
	for _, s := range []string{"limit=5&scope=global", "cursor=abc&includeSuperseded=true", "since=-1&until=9223372036854775807",
		"limit=lots", "x=1", "limit=1&limit=2", "text=%ff", "afterSeq=18446744073709551615", "days=1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r := &http.Request{URL: &url.URL{RawQuery: q.Encode()}}
		for _, v := range []any{schemas.ListRequest{}, schemas.StatsRequest{}, schemas.ShowRequest{}, schemas.ForgetRequest{}} {
			p := reflect.New(reflect.TypeOf(v))
			if err := fromParams(r, p.Elem()); err != nil {
				continue
			}
			// Accepted: every parameter named a field, once.
			for name, vals := range q {
				if !fieldByJSON(p.Elem(), name).IsValid() || len(vals) != 1 {
					t.Fatalf("%T accepted %q", v, raw)
				}
			}
		}
	})
}

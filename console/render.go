package console

import (
	"bytes"
	"html/template"
	"net/http"
	"time"
)

// pageNames are the pages, each a template file defining "content".
var pageNames = []string{"overview", "memories", "memory", "delete", "search", "dlq", "letter", "distill", "config", "login", "error"}

// navOf is the menu entry a page belongs to.
var navOf = map[string]string{"overview": "overview", "memories": "memories", "memory": "memories", "delete": "memories",
	"search": "search", "dlq": "dlq", "letter": "dlq", "distill": "distill", "config": "config"}

var titleOf = map[string]string{"overview": "Overview", "memories": "Memories", "memory": "Memory", "delete": "Delete a memory",
	"search": "Search", "dlq": "Dead letters", "letter": "Dead letter", "distill": "Distillation", "config": "Configuration",
	"login": "Log in", "error": "Error"}

var funcs = template.FuncMap{
	"date": func(ms int64) string {
		if ms == 0 {
			return "—"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04")
	},
	"mb": func(bytes int64) float64 { return float64(bytes) / (1 << 20) },
	"short": func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	},
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if pages[name], err = t.ParseFS(templateFS, "templates/"+name+".html"); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

// page is what the layout renders around a page's content.
type page struct {
	Title, Nav string
	CSRF       string
	Role       Role
	Login      bool // logged in: offer to log out
	Data       any
}

// render writes page name with data, with status. The page is rendered
// whole before anything is sent, so a template failure is a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	p := page{Title: titleOf[name], Nav: navOf[name], Data: data}
	if sess := sessionFrom(r); sess != nil {
		p.CSRF, p.Role, p.Login = sess.csrf, sess.role, true
	}
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		s.o.Log.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

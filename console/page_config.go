package console

import (
	"encoding/json"
	"net/http"

	"github.com/clawmem/clawmem/config"
)

type configView struct {
	Available bool
	Report    config.CheckReport
	Effective string
	Err       string
}

func (s *Server) configPage(w http.ResponseWriter, r *http.Request) {
	v := configView{Available: s.o.ConfigFile != nil}
	if v.Available {
		v.Report = config.Check(*s.o.ConfigFile)
		if f, err := config.Read(*s.o.ConfigFile); err != nil {
			v.Err = err.Error()
		} else if eff, err := f.Effective(false); err != nil {
			v.Err = err.Error()
		} else {
			b, _ := json.MarshalIndent(eff, "", "  ")
			v.Effective = string(b)
		}
	}
	s.render(w, r, http.StatusOK, "config", v)
}

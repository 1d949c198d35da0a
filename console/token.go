package console

import (
	"fmt"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/authdir"
)

// AdminToken is the console's admin token: ui.adminToken, else the data
// dir's auth/console.token, made when create.
func AdminToken(cfg *config.Config, create bool) (string, error) {
	tok, err := envsubst.Expand(cfg.UI.AdminToken)
	if err != nil {
		return "", fmt.Errorf("ui.adminToken: %w", err)
	}
	if tok != "" {
		return tok, nil
	}
	if create {
		tok, err = authdir.Token(cfg.DataDir, authdir.ConsoleToken)
	} else {
		tok, err = authdir.Read(cfg.DataDir, authdir.ConsoleToken)
	}
	if err != nil {
		return "", fmt.Errorf("the console's token: %w (clawmem up or clawmem ui makes it at first start)", err)
	}
	return tok, nil
}

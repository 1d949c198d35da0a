package config

import "github.com/clawmem/clawmem/engine/redact"

// Secrets says what happens to a credential (an API key, a password, a
// private key) in what clawmem is given to remember.
type Secrets struct {
	// Mode is redact (default: the secret is replaced by a marker before
	// anything is stored, embedded or sent to a model), refuse (a tool
	// call or import holding one fails; capture drops it) or off.
	Mode string `json:"mode"`
}

// SecretsMode is secrets.mode, checked by Validate.
func (c *Config) SecretsMode() redact.Mode {
	m, err := redact.ParseMode(c.Secrets.Mode)
	if err != nil {
		return redact.ModeRedact
	}
	return m
}

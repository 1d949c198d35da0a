package config

import (
	"encoding/json"
	"net/url"
	"strings"
)

// Effective is the configuration in effect as a tree of every key, defaults
// applied, for printing. Unless resolved, a value written with ${VAR}
// references is shown as written. Secrets — API keys, tokens, inline
// credentials, storageOptions keys, URL passwords — are masked, except a
// reference shown as written.
func (f *File) Effective(resolved bool) (map[string]any, error) {
	b, err := json.Marshal(f.Config)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if !resolved {
		overlayWritten(out, f.written)
	}
	m := masker{resolved: resolved}
	m.tree(out, false)
	return out, nil
}

// overlayWritten puts back, at the same place, every string of written that
// holds a ${VAR} reference.
func overlayWritten(out, written map[string]any) {
	for k, w := range written {
		switch w := w.(type) {
		case string:
			if strings.Contains(w, "${") {
				if _, ok := out[k]; ok {
					out[k] = w
				}
			}
		case map[string]any:
			if o, ok := out[k].(map[string]any); ok {
				overlayWritten(o, w)
			}
		case []any:
			if o, ok := out[k].([]any); ok && len(o) == len(w) {
				for i, e := range w {
					if s, ok := e.(string); ok && strings.Contains(s, "${") {
						o[i] = s
					}
				}
			}
		}
	}
}

// masker masks secrets in place. Unless resolved, a secret written as a
// ${VAR} reference is left as written: it says where the secret is, not
// what it is.
type masker struct{ resolved bool }

// tree masks m. Under storageOptions (a LanceDB object store's) every
// string but the endpoint and region is a credential.
func (ms masker) tree(m map[string]any, inStorage bool) {
	for k, v := range m {
		switch v := v.(type) {
		case string:
			secret := isSecretKey(k) || (strings.EqualFold(k, "credentials") && isInlineCredentials(v)) ||
				(inStorage && !strings.EqualFold(k, "endpoint") && !strings.EqualFold(k, "region"))
			if secret {
				m[k] = ms.secret(v)
			} else if ms.resolved || !strings.Contains(v, "${") {
				m[k] = maskURLPassword(v)
			}
		case map[string]any:
			ms.tree(v, inStorage || strings.EqualFold(k, "storageOptions"))
		case []any:
			for _, e := range v {
				if o, ok := e.(map[string]any); ok {
					ms.tree(o, inStorage)
				}
			}
		}
	}
}

func (ms masker) secret(s string) string {
	if !ms.resolved && strings.Contains(s, "${") {
		return s
	}
	return Mask(s)
}

// isSecretKey: apiKey, rerankApiKey, token, sessionToken, secretAccessKey,
// password... but not maxTokens.
func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	return strings.HasSuffix(k, "apikey") || strings.HasSuffix(k, "token") || strings.Contains(k, "secret") ||
		strings.Contains(k, "password") || strings.Contains(k, "accesskey")
}

// isInlineCredentials tells a .creds file's contents from its path.
func isInlineCredentials(s string) bool {
	return strings.Contains(s, "\n") || strings.Contains(s, "-----BEGIN")
}

// Mask hides a secret but keeps enough to tell keys apart: a short vendor
// prefix ("jina_", "sk-") and the last four characters, "jina_****abcd",
// never half of the value or more.
func Mask(s string) string {
	const tail = 4
	switch {
	case s == "":
		return ""
	case len(s) < 3*tail:
		return "****"
	}
	prefix := ""
	if i := strings.IndexAny(s, "_-"); i > 0 && i < 8 {
		prefix = s[:i+1]
	}
	if 2*(len(prefix)+tail) >= len(s) {
		prefix = ""
	}
	return prefix + "****" + s[len(s)-tail:]
}

func maskURLPassword(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	u.User = url.UserPassword(u.User.Username(), "****")
	return strings.Replace(u.String(), "%2A%2A%2A%2A", "****", 1)
}

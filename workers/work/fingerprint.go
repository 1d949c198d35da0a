package work

import (
	"crypto/sha256"
	"encoding/hex"
)

// Fingerprint identifies a message by its role and text. Producers
// remember by it how far they read a session — capture's session cursor,
// distillation's session mark — so it must not change: the fingerprints
// stored in their buckets would no longer match.
func Fingerprint(role, text string) string {
	h := sha256.Sum256([]byte(role + "\x00" + text))
	return hex.EncodeToString(h[:8])
}

package watcher

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
)

// record is a file's entry in the schemas.BucketWatch bucket. The record is
// written before any entry carries its FileID, and Offset only moves past
// lines whose entries JetStream has acknowledged.
type record struct {
	// Path is the file relative to the state dir, for people reading the
	// bucket; the key is a hash of it.
	Path string `json:"path"`
	// FileID names this generation of the file in every Msg-Id.
	FileID string `json:"fileId"`
	// Offset is where the first line not yet published starts.
	Offset int64 `json:"offset"`
	// Session is the id from the session header line, once read.
	Session string `json:"session,omitempty"`
	// Inode, where the platform has one, tells a renamed file from a new
	// one at the same name.
	Inode uint64 `json:"inode,omitempty"`
	// FP is a hash of the file's first FPLen bytes (at most fpMax), which
	// tells a file rewritten in place, or one whose inode was reused, from
	// the one the offset belongs to.
	FPLen int64  `json:"fpLen,omitempty"`
	FP    string `json:"fp,omitempty"`
	// Digest is the state of a SHA-256 of the bytes before Offset (the
	// lines already handled), so that a file rewritten with those same
	// bytes first is known for the same file and followed on from Offset.
	// Records written before it existed have none.
	Digest string `json:"digest,omitempty"`
}

// prefixHash hashes what a file holds before an offset, as it is read.
type prefixHash struct{ h hash.Hash }

func newPrefixHash() *prefixHash { return &prefixHash{h: sha256.New()} }

// hashPrefix hashes the first n bytes of f.
func hashPrefix(f *os.File, n int64) (*prefixHash, error) {
	p := newPrefixHash()
	if _, err := io.Copy(p.h, io.NewSectionReader(f, 0, n)); err != nil {
		return nil, fmt.Errorf("read the start of %s: %w", f.Name(), err)
	}
	return p, nil
}

// restorePrefixHash takes a hash up again from its encoded state.
func restorePrefixHash(state string) (*prefixHash, error) {
	b, err := base64.StdEncoding.DecodeString(state)
	if err != nil {
		return nil, err
	}
	p := newPrefixHash()
	if err := p.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return p, nil
}

// state encodes the hash so that it can be taken up again.
func (p *prefixHash) state() string {
	b, err := p.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return "" // unreachable: SHA-256 always marshals
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (p *prefixHash) clone() *prefixHash {
	if p == nil {
		return nil
	}
	c, err := restorePrefixHash(p.state())
	if err != nil {
		return nil
	}
	return c
}

// add hashes one more line: the bytes line and then nl.
func (p *prefixHash) add(line, nl []byte) {
	p.h.Write(line)
	p.h.Write(nl)
}

// addRange hashes n bytes of f from off.
func (p *prefixHash) addRange(f *os.File, off, n int64) error {
	if _, err := io.Copy(p.h, io.NewSectionReader(f, off, n)); err != nil {
		return fmt.Errorf("read %s at %d: %w", f.Name(), off, err)
	}
	return nil
}

// sameAs reports whether p and q have hashed the same bytes.
func (p *prefixHash) sameAs(q *prefixHash) bool { return bytes.Equal(p.h.Sum(nil), q.h.Sum(nil)) }

// recordKey is the bucket key of a session file: the agent, then a hash of
// the name, since file names may hold characters keys may not. Session
// ids are UUIDs, so names do not collide between machines sharing a bucket.
func recordKey(agent, name string) string {
	sum := sha256.Sum256([]byte(name))
	return agent + "." + hex.EncodeToString(sum[:16])
}

// msgIDPrefix starts every transcript entry's Nats-Msg-Id.
const msgIDPrefix = "transcript."

// msgID is the Nats-Msg-Id of the line at offset in one generation of a
// file: the same line always gets the same id, so publishing it again
// after a crash is a no-op.
func msgID(agent, fileID string, offset int64) string {
	return msgIDPrefix + agent + "." + fileID + "." + strconv.FormatInt(offset, 10)
}

// parseMsgID splits an id made by msgID.
func parseMsgID(id string) (agent, fileID string, offset int64, ok bool) {
	rest, ok := strings.CutPrefix(id, msgIDPrefix)
	if !ok {
		return "", "", 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, false
	}
	offset, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || offset < 0 {
		return "", "", 0, false
	}
	return parts[0], parts[1], offset, true
}

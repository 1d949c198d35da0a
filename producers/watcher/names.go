package watcher

import "strings"

const (
	jsonlExt    = ".jsonl"
	topicMarker = "-topic-"
)

// rotationMarkers follow a session file's name when OpenClaw retires it:
// "<name>.jsonl.reset.<ts>" on /new, "<name>.jsonl.deleted.<ts>" on delete.
var rotationMarkers = []string{jsonlExt + ".reset.", jsonlExt + ".deleted."}

// sessionFile is what the name of a file in a sessions directory says.
type sessionFile struct {
	Name     string // the base name
	Original string // the live file's name: Name, or Name before its rotation suffix
	Session  string // Original without .jsonl
	Topic    bool   // a thread file, <sessionId>-topic-<id>.jsonl
}

// rotated reports a file retired by /new or deletion.
func (f sessionFile) rotated() bool { return f.Name != f.Original }

// parseFileName reads a base name from a sessions directory; ok is false
// for anything that is not a session transcript (sessions.json, lock and
// temp files, hidden files).
func parseFileName(name string) (sessionFile, bool) {
	if name == "" || name[0] == '.' || strings.ContainsAny(name, `/\`) {
		return sessionFile{}, false
	}
	original := name
	if !strings.HasSuffix(name, jsonlExt) {
		cut := -1
		for _, m := range rotationMarkers {
			if i := strings.Index(name, m); i > 0 && i+len(m) < len(name) && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut < 0 {
			return sessionFile{}, false
		}
		original = name[:cut+len(jsonlExt)]
	}
	stem := strings.TrimSuffix(original, jsonlExt)
	if stem == "" || strings.Contains(stem, rotationMarkers[0]) || strings.Contains(stem, rotationMarkers[1]) {
		return sessionFile{}, false
	}
	i := strings.Index(stem, topicMarker)
	topic := i > 0 && i+len(topicMarker) < len(stem)
	return sessionFile{Name: name, Original: original, Session: stem, Topic: topic}, true
}

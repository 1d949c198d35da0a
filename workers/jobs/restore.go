package jobs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/schemas"
)

// ErrStoreNotEmpty refuses a restore that would mix a backup with
// memories already stored.
var ErrStoreNotEmpty = errors.New("store is not empty")

// RestoreReport is what a restore did. Restored must equal Expected.
type RestoreReport struct {
	Lines       int `json:"lines"`       // memories in the file
	Duplicates  int `json:"duplicates"`  // lines repeating an earlier id, skipped
	Expected    int `json:"expected"`    // distinct memories, history included
	Restored    int `json:"restored"`    // memories in the store afterwards, history included
	VectorsKept int `json:"vectorsKept"` // taken from the file
	Embedded    int `json:"embedded"`    // embedded again
}

// WriteText prints the report of a restore from source for a person.
func (r RestoreReport) WriteText(w io.Writer, source string) {
	fmt.Fprintf(w, "restored %s\nexpected %d memories, restored %d", source, r.Expected, r.Restored)
	fmt.Fprintf(w, " (%d vectors from the file, %d embedded", r.VectorsKept, r.Embedded)
	if r.Duplicates > 0 {
		fmt.Fprintf(w, ", %d repeated ids skipped", r.Duplicates)
	}
	fmt.Fprintln(w, ")")
}

// restoreBatch is how many memories are embedded and imported together.
const restoreBatch = 256

// Restore loads a backup or snapshot into an empty store, keeping ids and
// timestamps. Vectors in the file are kept when they have the store's
// dimension; every other text is embedded with emb. The whole file is
// checked before anything is written. progress, when set, is called with
// the memories done and due.
func Restore(ctx context.Context, st engine.Store, emb embed.Embedder, r io.Reader, progress func(done, total int)) (RestoreReport, error) {
	var rep RestoreReport
	stats, err := st.Stats(ctx, engine.AllScopes())
	if err != nil {
		return rep, err
	}
	// A backup holds every row, superseded and archived ones too: the
	// store is counted the same way, before and after.
	if n := stats.Total + stats.History; n > 0 {
		return rep, fmt.Errorf("%w: it holds %d memories; restore only into an empty store (a new --db directory)", ErrStoreNotEmpty, n)
	}
	ms, err := readBackup(r, st.Dimensions(), &rep)
	if err != nil {
		return rep, err
	}
	for start := 0; start < len(ms); start += restoreBatch {
		batch := ms[start:min(start+restoreBatch, len(ms))]
		var idx []int
		var texts []string
		for i, m := range batch {
			if m.Vector == nil {
				idx = append(idx, i)
				texts = append(texts, m.Text)
			}
		}
		if len(texts) > 0 {
			vecs, err := emb.EmbedPassages(ctx, texts)
			if err != nil {
				return rep, fmt.Errorf("embed memories %d-%d: %w", start+1, start+len(batch), err)
			}
			for j, i := range idx {
				batch[i].Vector = vecs[j]
			}
		}
		if err := st.Import(ctx, batch...); err != nil {
			return rep, fmt.Errorf("import memories %d-%d: %w", start+1, start+len(batch), err)
		}
		if progress != nil {
			progress(start+len(batch), len(ms))
		}
	}
	if stats, err = st.Stats(ctx, engine.AllScopes()); err != nil {
		return rep, err
	}
	rep.Restored = stats.Total + stats.History
	return rep, nil
}

// readBackup parses and checks every line; a file with any bad line is
// refused whole, with the line numbers.
func readBackup(r io.Reader, dim int, rep *RestoreReport) ([]schemas.Memory, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), schemas.MaxTextBytes+schemas.MaxMetadataBytes+64*dim+(1<<20))
	seen := map[string]bool{}
	var ms []schemas.Memory
	var bad []string
	n, nbad := 0, 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		rep.Lines++
		var m schemas.Memory
		err := json.Unmarshal(raw, &m)
		if err == nil {
			m.ID = strings.ToLower(m.ID)
			m.Normalize()
			err = m.Validate()
			if err == nil && !schemas.IsUUID(m.ID) {
				err = fmt.Errorf("id %q is not a UUID", m.ID)
			}
		}
		if err != nil {
			if nbad++; nbad <= 10 {
				bad = append(bad, fmt.Sprintf("line %d: %v", n, err))
			}
			continue
		}
		if seen[m.ID] {
			rep.Duplicates++
			continue
		}
		seen[m.ID] = true
		if len(m.Vector) == dim {
			rep.VectorsKept++
		} else {
			m.Vector = nil
			rep.Embedded++
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read backup after line %d: %w", n, err)
	}
	if nbad > 0 {
		if nbad > len(bad) {
			bad = append(bad, fmt.Sprintf("... and %d more", nbad-len(bad)))
		}
		return nil, fmt.Errorf("%w: %d bad lines in the backup, nothing was restored:\n  %s", schemas.ErrInvalid, nbad, strings.Join(bad, "\n  "))
	}
	rep.Expected = len(ms)
	return ms, nil
}

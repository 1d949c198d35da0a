package chaos

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/portable"
)

// importFile writes body to name in dir and imports it into the running
// clawmem as `clawmem import` does when one runs: read by the portable
// reader, supersede chains checked, batches sent to the admin import over
// nc. Near-duplicates are kept (--no-dedup), so that a row that gets
// through is stored and counted. It is refused when no row is imported:
// the import failed, or every row failed or was skipped.
func importFile(ctx context.Context, nc *nats.Conn, dir, name string, body []byte) (bool, string) {
	path := filepath.Join(dir, filepath.Base(cmp.Or(name, "import.jsonl")))
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return false, "write the file: " + err.Error()
	}
	defer os.Remove(path)
	src, err := client.OpenFileSource(path, "")
	if err != nil {
		return true, "open: " + err.Error()
	}
	defer src.Close()
	b := client.NewNATSBulk(nc) // not closed: nc is the caller's
	checked, err := client.ChainChecked(ctx, src, b)
	if err != nil {
		return true, "check: " + err.Error()
	}
	out, err := client.Import(ctx, b, checked, client.ImportJob{Options: client.ImportOptions{NoDedup: true}})
	answer := fmt.Sprintf("%d of %d rows imported (%d failed, %d skipped)", out.Imported, out.Total(), out.Failed, out.Skipped)
	if err != nil {
		answer += ": " + err.Error()
	}
	var why []string
	for _, rs := range [][]portable.Result{out.Failures, out.Skips} {
		for _, r := range rs {
			why = append(why, client.DescribeResult(r))
		}
	}
	if len(why) > 0 {
		answer += ": " + strings.Join(why, "; ")
	}
	return out.Imported == 0, clip(answer)
}

// clip shortens an answer for the report.
func clip(s string) string {
	const limit = 300
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}

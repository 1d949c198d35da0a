// Command clawmem is long-term memory for AI agents: one binary that runs
// the whole pipeline on a laptop or any single role of it on a cluster.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

package portable

import (
	"fmt"
	"slices"
)

// ChainRow is what CheckChains needs of an import row: its line, its id
// and the memory it names as its successor (supersededBy).
type ChainRow struct {
	Line         int
	ID           string
	SupersededBy string
}

// CheckChains finds the rows of a file whose supersede chain is broken: a
// successor that is neither in the file nor in the store (exists says
// whether the store has an id), or a cycle of rows superseding each other.
// It returns a reason per failing line; the other rows import as usual.
func CheckChains(rows []ChainRow, exists func(id string) (bool, error)) (map[int]string, error) {
	next := make(map[string]string, len(rows))
	inFile := make(map[string]bool, len(rows))
	for _, r := range rows {
		inFile[r.ID] = true
		if r.SupersededBy != "" {
			next[r.ID] = r.SupersededBy
		}
	}
	bad := map[int]string{}
	known := map[string]bool{}
	for _, r := range rows {
		to := r.SupersededBy
		if to == "" || inFile[to] {
			continue
		}
		ok, seen := known[to]
		if !seen {
			var err error
			if ok, err = exists(to); err != nil {
				return nil, err
			}
			known[to] = ok
		}
		if !ok {
			bad[r.Line] = fmt.Sprintf("supersededBy %s: no such memory in the file or the store (a missing link in the chain)", to)
		}
	}
	// A cycle: following supersededBy from a row comes back to it.
	state := map[string]int{} // 0 unvisited, 1 on the current path, 2 done
	inCycle := map[string]bool{}
	for _, r := range rows {
		var path []string
		id := r.ID
		for id != "" && state[id] == 0 {
			state[id] = 1
			path = append(path, id)
			id = next[id]
		}
		if id != "" && state[id] == 1 { // back on the path: the rest of it from id is a cycle
			for _, p := range path[slices.Index(path, id):] {
				inCycle[p] = true
			}
		}
		for _, p := range path {
			state[p] = 2
		}
	}
	for _, r := range rows {
		if inCycle[r.ID] {
			bad[r.Line] = fmt.Sprintf("supersededBy %s: the chain of superseded memories comes back to this one (a cycle)", r.SupersededBy)
		}
	}
	return bad, nil
}

//go:build race

package rules

// raceEnabled: the race detector slows the tests that read every training
// pair several-fold, and finds nothing in their single goroutine.
const raceEnabled = true

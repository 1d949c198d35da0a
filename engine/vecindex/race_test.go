//go:build race

package vecindex

const raceEnabled = true

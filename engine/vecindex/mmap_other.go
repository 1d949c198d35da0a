//go:build !linux

package vecindex

import (
	"errors"
	"os"
)

// canMap: elsewhere segments are read into memory.
const canMap = false

type region struct{}

func mapFile(*os.File, int64, int, int, bool, bool) ([]byte, region, error) {
	return nil, region{}, errors.New("memory-mapped segments need Linux")
}

func (region) unmap() {}

func release([]byte) {}

func dupFile(*os.File) (*os.File, error) {
	return nil, errors.New("memory-mapped segments need Linux")
}

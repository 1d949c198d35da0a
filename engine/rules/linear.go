package rules

// The capture model is trained on what capture would keep, and that
// depends on the injection model; the replace model reads only what
// capture's model could keep. Each is trained in a run of its own, which
// embeds the file the run before wrote.
//go:generate go test -run ^TestInjectionModelReproducible$ -update-injection-model
//go:generate go test -run ^TestCaptureModelReproducible$ -update-capture-model
//go:generate go test -run ^TestReplaceModelReproducible$ -update-replace-model

import (
	"encoding/binary"
	"math"
	"slices"
)

// linearModel is a learned scorer over hashed text features: one or more
// heads, each a logistic regression (bias + scale · Σ weight[bucket] ·
// value, a feature's value being its count divided by the square root of
// the text's feature count, textNorm). The injection detector has one
// head; capture has one for "worth keeping" and one per category.
//
// The weights are generated, not written: trainers in test files fit them
// on the labelled corpora under testdata/ and rewrite the model files,
// and a test per model trains again and fails if the committed file
// differs. Weights are int16, scaled per head.
type linearModel struct {
	bits  uint32 // 2^bits buckets per head
	heads []linearHead
}

type linearHead struct {
	weights   []int16
	scale     float32
	bias      float32
	threshold float32
	// floor is a second, lower threshold, for texts a rule vouches for:
	// the head then only vetoes what it is sure of (capture keeps what
	// the word lists keep unless the model scores it below floor).
	floor float32
}

// linearHeader: the magic, then bits and the number of heads; each head
// is then scale, bias, threshold and floor, and its weights.
const (
	linearMagicLen = 8
	maxLinearBits  = 20
	maxLinearHeads = 16
	// linearHeadHeader: scale, bias, threshold and floor.
	linearHeadHeader = 16
)

func mustDecodeLinear(b []byte, magic, file string) *linearModel {
	m, ok := decodeLinear(b, magic)
	if !ok {
		panic("rules: " + file + " is damaged; run go generate ./engine/rules")
	}
	return m
}

func decodeLinear(b []byte, magic string) (*linearModel, bool) {
	if len(b) < linearMagicLen+8 || string(b[:linearMagicLen]) != magic {
		return nil, false
	}
	bits := binary.LittleEndian.Uint32(b[linearMagicLen:])
	n := binary.LittleEndian.Uint32(b[linearMagicLen+4:])
	if bits == 0 || bits > maxLinearBits || n == 0 || n > maxLinearHeads {
		return nil, false
	}
	size := 1 << bits
	b = b[linearMagicLen+8:]
	if len(b) != int(n)*(linearHeadHeader+2*size) {
		return nil, false
	}
	m := &linearModel{bits: bits, heads: make([]linearHead, n)}
	for i := range m.heads {
		h := &m.heads[i]
		h.scale = math.Float32frombits(binary.LittleEndian.Uint32(b[0:]))
		h.bias = math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
		h.threshold = math.Float32frombits(binary.LittleEndian.Uint32(b[8:]))
		h.floor = math.Float32frombits(binary.LittleEndian.Uint32(b[12:]))
		h.weights = make([]int16, size)
		w := b[linearHeadHeader:]
		for j := range h.weights {
			h.weights[j] = int16(binary.LittleEndian.Uint16(w[2*j:]))
		}
		b = b[linearHeadHeader+2*size:]
	}
	return m, true
}

func (m *linearModel) encode(magic string) []byte {
	size := 1 << m.bits
	b := make([]byte, 0, linearMagicLen+8+len(m.heads)*(linearHeadHeader+2*size))
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, m.bits)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.heads)))
	for _, h := range m.heads {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(h.scale))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(h.bias))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(h.threshold))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(h.floor))
		for _, x := range h.weights {
			b = binary.LittleEndian.AppendUint16(b, uint16(x))
		}
	}
	return b
}

// mask keeps the bits of a feature hash that pick its bucket.
func (m *linearModel) mask() uint32 { return 1<<m.bits - 1 }

// score is head i's log-odds for the features (hashes; the model masks
// them to its buckets). A feature counts once however often it occurs: a
// word said a hundred times ("very very very …") is no more evidence than
// said once. feats is sorted in place. Products are converted explicitly
// so that no platform fuses them: trainers pick thresholds with this very
// function.
func (m *linearModel) score(i int, feats []uint32) float32 {
	h := &m.heads[i]
	mask := m.mask()
	for k := range feats {
		feats[k] &= mask
	}
	slices.Sort(feats)
	var sum float32
	n := 0
	for k, f := range feats {
		if k > 0 && f == feats[k-1] {
			continue
		}
		sum += float32(h.weights[f])
		n++
	}
	return h.bias + float32(float32(h.scale*sum)*textNorm(n))
}

// minNormFeatures keeps a text of a few words from scoring as high as a
// sentence: "a < b and c > d" has too few features to be much evidence of
// anything.
const minNormFeatures = 64

// textNorm is what a feature counted once contributes in a text of n
// features.
func textNorm(n int) float32 { return float32(1 / math.Sqrt(float64(max(n, minNormFeatures)))) }

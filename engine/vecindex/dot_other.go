//go:build !amd64 || purego

package vecindex

// hasFMA and hasAVX2 are false where there is no assembly kernel.
const hasFMA, hasAVX2 = false, false

// dot is the float32 inner product of a and b[:len(a)].
func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// sum adds up a.
func sum(a []float32) float32 { return sumGeneric(a) }

// dot8 is the inner product of an int8 code and an int16 query.
func dot8(c []int8, q []int16) int32 { return dot8Generic(c, q) }

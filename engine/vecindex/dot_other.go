//go:build !amd64 || purego

package vecindex

// hasFMA is false where there is no assembly kernel.
const hasFMA = false

// dot is the float32 inner product of a and b[:len(a)].
func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// sum adds up a.
func sum(a []float32) float32 { return sumGeneric(a) }

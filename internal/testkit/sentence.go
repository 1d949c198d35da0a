package testkit

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var vocab = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november
oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember fjord grove
harbor iris jasper kelp lotus maple nectar onyx pearl quartz raven sage thyme umber violet willow yarrow zinnia anchor
beacon canyon dynamo engine falcon glacier horizon island jungle kernel lantern meadow nebula orbit prism quiver rocket
saddle temple utopia vortex wagon xenon yacht zephyr acorn bamboo cactus daisy eagle fern garnet hazel ivory jade koala
lemon mango nutmeg olive peach quince radish saffron tulip urchin vanilla walnut server deploy docker config backup
invoice customer meeting budget report release review cache token cluster editor theme coffee tea flight hotel`)

// Sentence makes a sentence of rare word combinations, so the local
// embedder sees no near-duplicates among thousands: the texts of the
// benchmarks, the fault scenarios and the tests that store many memories.
func Sentence(rng *rand.Rand, i int) string {
	w := make([]string, 8)
	for j := range w {
		w[j] = vocab[rng.IntN(len(vocab))]
	}
	return fmt.Sprintf("item %d: the %s", i, strings.Join(w, " "))
}

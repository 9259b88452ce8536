package sampling

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkArgpartition times the CPU fallback at decode shapes with typical
// chat filters; run with -cpu 1,2,... to see it spread rows over cores.
func BenchmarkArgpartition(b *testing.B) {
	for _, sh := range []struct{ B, V int }{{1, 128256}, {64, 50257}, {512, 50257}} {
		logits := gaussian(rand.New(rand.NewPCG(1, 2)), sh.B*sh.V, 5)
		tokens := make([]uint32, sh.B)
		for _, c := range []struct {
			name string
			p    Params
		}{
			{"top-p", withP(0.8, 0, 0.95, 0)},
			{"top-k+top-p", withP(0.8, 40, 0.95, 0)},
			{"min-p", withP(0.8, 0, 1, 0.05)},
		} {
			b.Run(fmt.Sprintf("%dx%d/%s", sh.B, sh.V, c.name), func(b *testing.B) {
				b.SetBytes(int64(4 * sh.B * sh.V))
				for i := range b.N {
					if err := Argpartition(tokens, logits, sh.B, sh.V, []Params{c.p}, Key{uint32(i), 1}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The row weights spread over cores (B < GOMAXPROCS) give the tokens the
// one-goroutine pass gives: the partial sums are added in chunk order, so a
// draw does not depend on the machine's core count.
func TestArgpartitionInnerParallelismDoesNotChangeTokens(t *testing.T) {
	const V = 5*weightChunk + 123
	rng := rand.New(rand.NewPCG(8, 9))
	var a, b fbScratch
	for i := range 40 {
		row := gaussian(rng, V, 4)
		for _, p := range []Params{withP(0.8, 0, 0.95, 0), withP(1, 40, 0.9, 0), withP(0.7, 0, 0.9, 0.02), withP(1.3, 100, 0.99, 0.001)} {
			key := Key{uint32(i), 3}
			serial, ok1 := argpartitionRow(row, uint32(i), p, key, &a, false)
			spread, ok2 := argpartitionRow(row, uint32(i), p, key, &b, true)
			if ok1 != ok2 || serial != spread {
				t.Fatalf("row %d %+v: serial %d (%v), spread %d (%v)", i, p, serial, ok1, spread, ok2)
			}
		}
	}
}

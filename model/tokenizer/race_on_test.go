//go:build race

package tokenizer

// raceEnabled scales down the randomized tests, which the race detector
// slows by an order of magnitude; the assertions stay the same.
const raceEnabled = true

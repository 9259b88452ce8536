//go:build !race

package sampling

// drawsPerCase is the number of draws per chi-square case. Under the race
// detector (draws_race_test.go) the samplers run about 20 times slower, so
// fewer draws are taken there; TestChiSquarePower shows that count still
// rejects the wrong distributions the suite guards against.
const drawsPerCase = 1_000_000

//go:build race

package sampling

const drawsPerCase = 150_000

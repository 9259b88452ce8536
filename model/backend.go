package model

import "context"

// backend is the seam for a second compute backend (MLX on Apple silicon is
// planned): it owns the weights in its own memory and creates sequences. The
// CPU backend below is the only implementation today.
type backend interface {
	// newSequence returns an empty sequence that can hold capacity tokens.
	newSequence(capacity int) sequence
	// name identifies the backend in reports ("cpu").
	name() string
}

// sequence is one generation's state on a backend: its KV cache and scratch.
// It is used by one goroutine at a time.
type sequence interface {
	// forward runs tokens at positions len() .. len()+len(tokens)-1 and
	// writes logits: for every token (len(tokens)*vocab values) when all is
	// set, else for the last token only (vocab values). It checks ctx between
	// layers and returns ctx.Err() (the cache then holds no partial tokens).
	forward(ctx context.Context, tokens []uint32, all bool, logits []float32) error
	// len is the number of tokens in the cache.
	len() int
}

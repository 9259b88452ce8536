package model

// textCodec is what generation needs from a tokenizer. The tokenizer
// package's *Tokenizer provides it through hfCodec; tests use small fakes.
type textCodec interface {
	Encode(text string, addSpecial bool) []uint32
	Decode(ids []uint32) string
	// newStream returns a decoder that turns ids into text as they come,
	// holding back bytes until they form complete UTF-8.
	newStream() streamDecoder
}

type streamDecoder interface {
	Add(id uint32) string
	// Flush returns held-back bytes (an incomplete character as U+FFFD).
	Flush() string
}

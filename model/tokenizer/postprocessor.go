package tokenizer

// templatePiece is one element of a TemplateProcessing "single" template:
// either the encoded sequence or the ids of a special token.
type templatePiece struct {
	sequence bool
	ids      []uint32
}

// template is the effect of the post_processor on a single sequence when
// special tokens are requested: TemplateProcessing templates applied in
// order (ByteLevel post-processors only move offsets, so they are dropped).
type template [][]templatePiece

func (t template) apply(ids []uint32) []uint32 {
	for _, pieces := range t {
		n := 0
		for _, p := range pieces {
			if p.sequence {
				n += len(ids)
			} else {
				n += len(p.ids)
			}
		}
		out := make([]uint32, 0, n)
		for _, p := range pieces {
			if p.sequence {
				out = append(out, ids...)
			} else {
				out = append(out, p.ids...)
			}
		}
		ids = out
	}
	return ids
}

package model

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/hipgo/hipgo/constrain"
)

// grammarVocab is the model's vocabulary as constrained decoding matches
// it (constrain.Vocab over tokenizer.TextBytes), built on first use: a
// few milliseconds for 128k tokens, then shared by every sequence.
type grammarVocab struct {
	once  sync.Once
	vocab *constrain.Vocab
	eos   []uint32 // the end-of-sequence ids, allowed once the value is complete
}

func (m *Model) grammarVocab() *grammarVocab {
	g := &m.gvocab
	g.once.Do(func() {
		tok := m.Tokenizer()
		tokens := make([][]byte, max(m.cfg.VocabSize, tok.VocabSize()))
		for id := range tok.VocabSize() {
			if !m.eos[uint32(id)] {
				tokens[id], _ = tok.TextBytes(uint32(id))
			}
		}
		g.vocab = constrain.NewVocab(tokens)
		for id := range m.eos {
			g.eos = append(g.eos, id)
		}
		slices.Sort(g.eos)
	})
	return g
}

// checkGrammar is CheckOptions' part for GenerateOptions.Grammar.
func (m *Model) checkGrammar() error {
	if !m.be.samplesOnHost() {
		return &UnsupportedOptionError{Option: "response_format", Backend: m.Backend()}
	}
	if m.Tokenizer() == nil {
		return fmt.Errorf("model: a grammar needs the model's tokenizer: %w", ErrNoTokenizer)
	}
	if len(m.eos) == 0 {
		return fmt.Errorf("model: a grammar needs an end-of-sequence token to end the value, and the model has none: %w", ErrOptions)
	}
	return nil
}

// seqGrammar is a sequence's constrained decoding: the matcher that
// follows its tokens and the mask of the next.
type seqGrammar struct {
	m    *constrain.Matcher
	mask []uint64
	eos  []uint32
}

func (m *Model) newSeqGrammar(g *constrain.Grammar) *seqGrammar {
	gv := m.grammarVocab()
	return &seqGrammar{m: g.NewMatcher(gv.vocab), mask: make([]uint64, (gv.vocab.Size()+63)/64), eos: gv.eos}
}

// apply sets the logits of the tokens that do not continue the value to
// -Inf (end of sequence continues a complete value, and only it).
func (g *seqGrammar) apply(row []float32) error {
	clear(g.mask)
	n := g.m.Mask(g.mask)
	if g.m.CanEnd() {
		for _, id := range g.eos {
			g.mask[id/64] |= 1 << (id % 64)
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("model: no token of the vocabulary continues the constrained value (or every one would need more than %d readings of the schema's anyOf at once)", constrain.MaxAlternatives)
	}
	inf := float32(math.Inf(-1))
	for id := range row {
		if id/64 >= len(g.mask) || g.mask[id/64]&(1<<(id%64)) == 0 {
			row[id] = inf
		}
	}
	return nil
}

// accept advances the matcher by the sampled token (end of sequence ends
// it instead).
func (g *seqGrammar) accept(id uint32) error {
	if slices.Contains(g.eos, id) {
		return nil
	}
	return g.m.Accept(id)
}

package sampling

import (
	"math"
	"strconv"
)

// Penalties change a row's logits before it is sampled: before the filters
// and the temperature, and before a greedy argmax, as llama.cpp's sampler
// chain and vLLM apply them. For each token t, in this order:
//
//  1. logit_bias: logit[t] += LogitBias[t];
//  2. repetition: when t is in the prompt or was generated, logit[t] /=
//     Repetition if logit[t] >= 0, else logit[t] *= Repetition
//     (transformers' RepetitionPenaltyLogitsProcessor, llama.cpp's
//     repeat_penalty over the whole sequence);
//  3. frequency and presence: logit[t] -= c[t]*Frequency + (c[t] > 0)*Presence,
//     where c[t] counts the times t was generated (OpenAI's definition: the
//     prompt does not count).
//
// The zero value changes nothing.
type Penalties struct {
	// LogitBias is added to the logit of each token id it names: each value
	// in [-100, 100] (OpenAI's range; -100 all but bans a token, 100 all but
	// forces it).
	LogitBias map[uint32]float32
	// Presence, in [-2, 2]: subtracted once from the logit of every token
	// generated so far; 0 is off.
	Presence float32
	// Frequency, in [-2, 2]: subtracted from a token's logit once for each
	// time it was generated so far; 0 is off.
	Frequency float32
	// Repetition, finite and > 0, shrinks the logits of the tokens seen so
	// far (prompt and output) towards 0 when above 1; 1 is off, and so is 0
	// (unset).
	Repetition float32
}

// Validate reports the first penalty outside its range as a
// *ParameterError naming it (logit_bias, presence_penalty,
// frequency_penalty, repetition_penalty). With V > 0 a logit_bias key must
// also be a token id below V; with V <= 0 the keys are not checked.
func (p Penalties) Validate(V int) error {
	for _, q := range []struct {
		name string
		v    float32
	}{{"presence_penalty", p.Presence}, {"frequency_penalty", p.Frequency}} {
		if !(q.v >= -2 && q.v <= 2) {
			return &ParameterError{Name: q.name, Row: -1, Value: fmtF32(q.v), Rule: "must be in [-2, 2] (0 = off)"}
		}
	}
	if r := p.Repetition; !(r >= 0) || math.IsInf(float64(r), 1) {
		return &ParameterError{Name: "repetition_penalty", Row: -1, Value: fmtF32(r), Rule: "must be finite and > 0 (1 = off)"}
	}
	// The smallest offending key, so the error does not depend on map order.
	bad := int64(-1)
	var rule, value string
	for id, b := range p.LogitBias {
		var r string
		switch {
		case !(b >= -100 && b <= 100):
			r = "must be in [-100, 100]"
		case V > 0 && int64(id) >= int64(V):
			r = "is not a token id: the vocabulary has " + strconv.Itoa(V) + " tokens"
		default:
			continue
		}
		if bad < 0 || int64(id) < bad {
			bad, rule, value = int64(id), r, strconv.FormatUint(uint64(id), 10)+": "+fmtF32(b)
		}
	}
	if bad >= 0 {
		return &ParameterError{Name: "logit_bias", Row: -1, Value: value, Rule: rule}
	}
	return nil
}

// Active lists the parameters that change anything, by their names in
// ParameterError (a backend that cannot apply them refuses by name).
func (p Penalties) Active() []string {
	var out []string
	for _, b := range p.LogitBias {
		if b != 0 {
			out = append(out, "logit_bias")
			break
		}
	}
	if p.Presence != 0 {
		out = append(out, "presence_penalty")
	}
	if p.Frequency != 0 {
		out = append(out, "frequency_penalty")
	}
	if p.Repetition != 0 && p.Repetition != 1 {
		out = append(out, "repetition_penalty")
	}
	return out
}

// History is what the penalties read of one sequence: the tokens it has
// seen (prompt and output) and how often it generated each. Not safe for
// concurrent use.
type History struct {
	seen      map[uint32]struct{}
	generated map[uint32]int
}

// NewHistory starts a sequence's history with its prompt.
func NewHistory(prompt []uint32) *History {
	h := &History{seen: make(map[uint32]struct{}, len(prompt)), generated: map[uint32]int{}}
	for _, id := range prompt {
		h.seen[id] = struct{}{}
	}
	return h
}

// Add records a generated token.
func (h *History) Add(id uint32) {
	h.seen[id] = struct{}{}
	h.generated[id]++
}

// Apply changes row, one row of logits, in place by p and the sequence's
// history h, in the order of Penalties. Token ids at or past len(row) are
// left out (Validate with the row's V refuses such logit_bias keys). Each
// token's logit changes by its own bias, presence and counts only, so the
// result does not depend on the order the maps are walked in.
func (p Penalties) Apply(row []float32, h *History) {
	V := uint32(len(row))
	for id, b := range p.LogitBias {
		if id < V {
			row[id] += b
		}
	}
	if r := p.Repetition; r != 0 && r != 1 {
		for id := range h.seen {
			if id >= V {
				continue
			}
			if x := row[id]; x < 0 {
				row[id] = x * r
			} else {
				row[id] = x / r
			}
		}
	}
	if p.Presence != 0 || p.Frequency != 0 {
		for id, c := range h.generated {
			if id < V {
				row[id] -= float32(c)*p.Frequency + p.Presence
			}
		}
	}
}

package sampling

import (
	"math"
	"strconv"
)

// Params are one row's sampling parameters. The zero value is not valid
// (top_p 0 is an error); start from DefaultParams.
//
//   - Temperature: finite and >= 0. 0 is greedy (argmax, lowest index on
//     ties); so is a positive temperature whose reciprocal overflows float32
//     (below about 2.9e-39).
//   - TopK: 0 is off; k >= V has no effect; k < 0 is an error.
//   - TopP: 1 is off; (0, 1) is active; anything else (<= 0, > 1, NaN) is an
//     error.
//   - MinP: 0 is off; (0, 1] is active; anything else is an error.
type Params struct {
	Temperature float32
	TopK        int
	TopP        float32
	MinP        float32
}

// DefaultParams is temperature 1 with every filter off: a plain draw from
// softmax(logits).
func DefaultParams() Params { return Params{Temperature: 1, TopP: 1} }

// MaxRounds is the largest round cap the rejection sampler accepts. The
// algorithm needs at most 31 rounds (see docs/sampling.md), so with this cap no
// row ever reports UNCONVERGED.
const MaxRounds = 32

// MaxKernelVocab bounds V for the kernels: top_k travels as a float32 in the
// kernels' parameter array, exact up to 2^24.
const MaxKernelVocab = 1 << 24

// maxVocab bounds V everywhere: indices are uint32 and group arithmetic
// (4 * (V/4 + 1)) must not wrap.
const maxVocab = 1<<31 - 1

// Validate reports the first parameter outside its range as a
// *ParameterError (errors.Is ErrInvalidParameter).
func (p Params) Validate() error { return p.validate(-1) }

func fmtF32(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }

func (p Params) validate(row int) error {
	t := p.Temperature
	if !(t >= 0) || math.IsInf(float64(t), 1) {
		return &ParameterError{Name: "temperature", Row: row, Value: fmtF32(t), Rule: "must be finite and >= 0 (0 = greedy)"}
	}
	if p.TopK < 0 {
		return &ParameterError{Name: "top_k", Row: row, Value: strconv.Itoa(p.TopK), Rule: "must be >= 0 (0 = off)"}
	}
	if !(p.TopP > 0 && p.TopP <= 1) {
		return &ParameterError{Name: "top_p", Row: row, Value: fmtF32(p.TopP), Rule: "must be in (0, 1] (1 = off)"}
	}
	if !(p.MinP >= 0 && p.MinP <= 1) {
		return &ParameterError{Name: "min_p", Row: row, Value: fmtF32(p.MinP), Rule: "must be in [0, 1] (0 = off)"}
	}
	return nil
}

// TopKActive, TopPActive and MinPActive say whether a filter changes
// anything for a row of V logits.
func (p Params) TopKActive(V int) bool { return p.TopK > 0 && p.TopK < V }
func (p Params) TopPActive() bool      { return p.TopP > 0 && p.TopP < 1 }
func (p Params) MinPActive() bool      { return p.MinP > 0 && p.MinP <= 1 }

// Filtered says whether any filter is active.
func (p Params) Filtered(V int) bool { return p.TopKActive(V) || p.TopPActive() || p.MinPActive() }

// Greedy says whether the row is an argmax: temperature 0, or 1/T
// overflowing float32.
func (p Params) Greedy() bool { return GumbelInvTemp(p.Temperature) == 0 }

// GumbelInvTemp is the inv_temp argument of gumbel_max_*: 1/T in
// float32, or 0 (greedy) when T is 0 or 1/T overflows. Other invalid
// temperatures (negative, NaN, +inf) also give 0; validate first.
func GumbelInvTemp(t float32) float32 {
	if !(t > 0) || math.IsInf(float64(t), 1) {
		return 0
	}
	inv := 1 / t
	if math.IsInf(float64(inv), 1) {
		return 0
	}
	return inv
}

// PackParams writes the rejection kernel's params array, [B, 4] float32 rows
// of {temperature, top_k, top_p, min_p}, with "off" spelled the way the
// kernel reads it (top_k 0 when off or k >= V). params has one entry per row,
// or one entry for every row. It validates everything first.
func PackParams(dst []float32, params []Params, B, V int) error {
	const entry = "sampling.PackParams"
	if B <= 0 || V <= 0 || V > MaxKernelVocab {
		return shapeErr(entry, "B = %d, V = %d: need B > 0 and 0 < V <= %d", B, V, MaxKernelVocab)
	}
	if len(dst) != 4*B {
		return shapeErr(entry, "len(dst) = %d, want 4*B = %d", len(dst), 4*B)
	}
	if err := checkParams(entry, params, B); err != nil {
		return err
	}
	for r := 0; r < B; r++ {
		p := rowParams(params, r)
		dst[4*r+0], dst[4*r+1], dst[4*r+2], dst[4*r+3] = packRow(p, V)
	}
	return nil
}

func packRow(p Params, V int) (t, k, tp, mp float32) {
	if p.TopKActive(V) {
		k = float32(p.TopK)
	}
	return p.Temperature, k, p.TopP, p.MinP
}

// checkParams validates a per-row (len B) or broadcast (len 1) slice.
func checkParams(entry string, params []Params, B int) error {
	if len(params) != 1 && len(params) != B {
		return shapeErr(entry, "len(params) = %d, want 1 or B = %d", len(params), B)
	}
	for r, p := range params {
		row := r
		if len(params) == 1 {
			row = -1
		}
		if err := p.validate(row); err != nil {
			return err
		}
	}
	return nil
}

func rowParams(params []Params, r int) Params {
	if len(params) == 1 {
		return params[0]
	}
	return params[r]
}

// checkShape validates B, V and the logits and tokens lengths.
func checkShape(entry string, logits []float32, B, V, tokens int) error {
	if B <= 0 || V <= 0 || V > maxVocab {
		return shapeErr(entry, "B = %d, V = %d: need B > 0 and 0 < V <= %d", B, V, maxVocab)
	}
	if B > math.MaxInt/V || len(logits) != B*V {
		return shapeErr(entry, "len(logits) = %d, want B*V = %d*%d", len(logits), B, V)
	}
	if tokens != B {
		return shapeErr(entry, "len(tokens) = %d, want B = %d", tokens, B)
	}
	return nil
}

func checkMaxRounds(maxRounds int) error {
	if maxRounds < 1 || maxRounds > MaxRounds {
		return &ParameterError{Name: "max_rounds", Row: -1, Value: strconv.Itoa(maxRounds), Rule: "must be in [1, 32]"}
	}
	return nil
}

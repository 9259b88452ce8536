package sampling

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinels for errors.Is. Every error this package returns wraps one.
var (
	// ErrInvalidParameter: a sampling parameter (temperature, top_k, top_p,
	// min_p, max_rounds, a penalty) is outside its documented range.
	ErrInvalidParameter = errors.New("sampling: invalid parameter")
	// ErrShape: B, V, a slice length or a row stride does not fit.
	ErrShape = errors.New("sampling: bad shape")
	// ErrInvalidLogits: a row has no finite or +inf logit (all -inf or NaN).
	// The outputs are still written (token 0 for such rows).
	ErrInvalidLogits = errors.New("sampling: row without a finite or +inf logit")
	// ErrNoKernelPort: a direct kernel entry point was called on a backend
	// that has no port of that kernel.
	ErrNoKernelPort = errors.New("sampling: no kernel port for this backend")
)

// ParameterError names the parameter, the row (-1 for a call-wide one) and
// the rejected value.
type ParameterError struct {
	Name  string // "temperature", "top_k", "top_p", "min_p", "max_rounds", or a penalty: "logit_bias", "presence_penalty", "frequency_penalty", "repetition_penalty"
	Row   int
	Value string
	Rule  string // the accepted range
}

func (e *ParameterError) Error() string {
	where := ""
	if e.Row >= 0 {
		where = " in row " + strconv.Itoa(e.Row)
	}
	return fmt.Sprintf("sampling: invalid %s %s%s: %s", e.Name, e.Value, where, e.Rule)
}

func (e *ParameterError) Is(target error) bool { return target == ErrInvalidParameter }

// InvalidLogitsError lists the rows that had no finite or +inf logit. The
// call that returned it still wrote every output; those rows got token 0.
type InvalidLogitsError struct {
	Entry string // the function that found them, e.g. "sampling.Categorical"
	Rows  []int
}

func (e *InvalidLogitsError) Error() string {
	var b strings.Builder
	b.WriteString(e.Entry)
	if len(e.Rows) == 1 {
		fmt.Fprintf(&b, ": row %d has", e.Rows[0])
	} else {
		b.WriteString(": rows ")
		for i, r := range e.Rows {
			if i == 8 {
				fmt.Fprintf(&b, ", ... (%d rows)", len(e.Rows))
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(r))
		}
		b.WriteString(" have")
	}
	b.WriteString(" no finite or +inf logit (all -inf or NaN); token 0 was written")
	return b.String()
}

func (e *InvalidLogitsError) Is(target error) bool { return target == ErrInvalidLogits }

// NoKernelPortError is the refusal of a direct kernel entry point on a
// backend without a port. It is returned before any port is chosen.
type NoKernelPortError struct {
	Entry    string  // "sampling.GumbelMax"
	Backend  Backend // the backend asked for
	Fallback string  // what production callers use instead
}

func (e *NoKernelPortError) Error() string {
	b := string(e.Backend)
	if b == "" {
		b = `""`
	}
	return fmt.Sprintf("%s: no kernel port for backend %s; callers take the %s instead", e.Entry, b, e.Fallback)
}

func (e *NoKernelPortError) Is(target error) bool { return target == ErrNoKernelPort }

func shapeErr(entry, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", entry, ErrShape, fmt.Sprintf(format, args...))
}

package sampling

import "fmt"

// Status is the per-row outcome a sampler kernel writes next to each token
// (the rejection kernel's "ok" array; the Gumbel merge kernel's status).
type Status uint32

const (
	// StatusUnconverged: the rejection sampler reached its round cap; the
	// token is the row's argmax and the rounds entry equals the cap. An
	// unwritten (zeroed) buffer also reads as this status with rounds 0,
	// which is why overflow is counted only when rounds == cap.
	StatusUnconverged Status = 0
	// StatusOK: the token is a draw from the row's distribution.
	StatusOK Status = 1
	// StatusInvalidRow: no finite or +inf logit; the token is 0.
	StatusInvalidRow Status = 2
)

func (s Status) String() string {
	switch s {
	case StatusUnconverged:
		return "unconverged"
	case StatusOK:
		return "ok"
	case StatusInvalidRow:
		return "invalid-row"
	}
	return fmt.Sprintf("Status(%d)", uint32(s))
}

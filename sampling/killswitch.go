package sampling

import (
	"os"
	"strings"
	"sync"
)

// Kill switches for routing (not for the kernels: direct entry points stay
// callable). Unset means on; after lower-casing and trimming spaces, "0",
// "false", "off" and "no" mean off; any other value means on. Each variable
// is read once per process, on first use: a per-token getenv would show up
// in the measurements.
const (
	EnvGumbel    = "HIPGO_SAMPLING_GUMBEL"    // off: no-filter calls take the categorical fallback
	EnvRejection = "HIPGO_SAMPLING_REJECTION" // off: filtered calls take the argpartition fallback
)

var switches struct {
	once              sync.Once
	gumbel, rejection bool
}

func loadSwitches() {
	switches.once.Do(func() {
		switches.gumbel = switchOn(os.Getenv(EnvGumbel))
		switches.rejection = switchOn(os.Getenv(EnvRejection))
	})
}

func switchOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "off", "no":
		return false
	}
	return true
}

// GumbelRouting reports whether HIPGO_SAMPLING_GUMBEL lets the router pick
// the Gumbel-max kernel (backend support is a separate question: see
// GumbelMaxPorts().Supported).
func GumbelRouting() bool {
	loadSwitches()
	return switches.gumbel
}

// RejectionRouting reports whether HIPGO_SAMPLING_REJECTION lets the router
// pick the rejection kernel.
func RejectionRouting() bool {
	loadSwitches()
	return switches.rejection
}

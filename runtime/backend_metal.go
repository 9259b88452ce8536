package runtime

import (
	"errors"
	"fmt"
	goruntime "runtime"

	"github.com/hipgo/hipgo/runtime/driver"
)

// errMetalNotBuilt: the Metal backend's runtime adapter is not written yet.
// The Metal kernels ship as MSL source (kernels/), but nothing here can
// dispatch them; Open says so plainly instead of pretending.
var errMetalNotBuilt = errors.New("the Metal backend is not implemented in this version of hipgo")

type metalDriver struct{}

func (metalDriver) Kind() driver.Kind { return driver.Metal }

func (metalDriver) DeviceCount() (int, error) {
	if goruntime.GOOS != "darwin" {
		return 0, fmt.Errorf("metal: only on macOS (this is %s)", goruntime.GOOS)
	}
	return 0, fmt.Errorf("metal: %w", errMetalNotBuilt)
}

func (metalDriver) Open(int) (driver.Device, error) {
	return nil, fmt.Errorf("metal: %w", errMetalNotBuilt)
}

//go:build !darwin

package runtime

import (
	"github.com/hipgo/hipgo/metal"
	"github.com/hipgo/hipgo/runtime/driver"
)

// metalDeviceCount: metal.Load answers *metal.UnsupportedPlatformError off
// macOS ("metal: only on macOS (this is linux)").
func metalDeviceCount() (int, error) { return 0, metal.Load() }

func metalOpen(int) (driver.Device, error) { return nil, metal.Load() }

package runtime

import (
	"context"
	"fmt"

	"github.com/hipgo/hipgo/runtime/driver"
)

// BackendReport is what Survey found for one backend.
type BackendReport struct {
	Backend driver.Kind
	Devices []driver.Info
	// Err says why the backend is unusable (nil when it has devices): a
	// library not found (with the paths tried), a library found but refused
	// by dlopen (with its reason), an init failure (with the driver's code),
	// or no device.
	Err error
}

// Survey probes every built-in backend and describes each device it finds,
// without keeping any open. It is what tools/gpuinfo prints.
func Survey(ctx context.Context) []BackendReport {
	return survey(ctx, builtinDrivers())
}

func survey(ctx context.Context, drivers []driver.Driver) []BackendReport {
	var out []BackendReport
	for _, drv := range drivers {
		rep := BackendReport{Backend: drv.Kind()}
		done := make(chan struct{})
		go func() {
			defer close(done)
			n, err := drv.DeviceCount()
			if err != nil {
				rep.Err = err
				return
			}
			if n == 0 {
				rep.Err = &NoDeviceError{Backend: drv.Kind()}
				return
			}
			for i := 0; i < n; i++ {
				d, err := drv.Open(i)
				if err != nil {
					rep.Err = fmt.Errorf("device %d: %w", i, err)
					return
				}
				rep.Devices = append(rep.Devices, d.Info())
				if err := d.Close(); err != nil {
					rep.Err = fmt.Errorf("device %d: close: %w", i, err)
					return
				}
			}
		}()
		select {
		case <-done:
		case <-ctx.Done():
			rep.Err = fmt.Errorf("%s: probe did not finish: %w", drv.Kind(), ctx.Err())
			out = append(out, rep)
			return out
		}
		out = append(out, rep)
	}
	return out
}

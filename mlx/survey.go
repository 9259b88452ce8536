package mlx

import "errors"

// Report is what Survey found: the library, its MLX version and devices.
type Report struct {
	Library string
	Version string
	// Devices counts MLX's devices by type; nil when this libmlxc predates
	// mlx_device_count (mlx-c 0.5.0).
	Devices map[DeviceType]int
}

// Survey loads libmlxc and reports its version and devices, or why it is
// unusable (the library not found, a symbol missing, a failing call).
func Survey() (Report, error) {
	if err := Load(); err != nil {
		return Report{}, err
	}
	r := Report{Library: LibraryPath()}
	v, err := Version()
	if err != nil {
		return r, err
	}
	r.Version = v
	for _, t := range []DeviceType{CPU, GPU} {
		n, err := DeviceCount(t)
		if errors.Is(err, errors.ErrUnsupported) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		if r.Devices == nil {
			r.Devices = map[DeviceType]int{}
		}
		r.Devices[t] = n
	}
	return r, nil
}

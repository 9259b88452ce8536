package mlx

import "fmt"

// DeviceType is mlx_device_type.
type DeviceType int32

const (
	CPU DeviceType = 0
	GPU DeviceType = 1
)

func (t DeviceType) String() string {
	switch t {
	case CPU:
		return "cpu"
	case GPU:
		return "gpu"
	}
	return fmt.Sprintf("DeviceType(%d)", int32(t))
}

// Device is an mlx_device.
type Device struct{ handle }

// NewDevice is device index of type t. It does not check the device
// exists: see DeviceCount and Available.
func NewDevice(t DeviceType, index int) (*Device, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	h, err := callHandle("mlx_device_new_type", func() uintptr { return l.deviceNewType(int32(t), int32(index)) })
	if err != nil {
		return nil, err
	}
	d := &Device{}
	d.handle = newHandle(d, h)
	return d, nil
}

// Free releases the device handle.
func (d *Device) Free() error {
	return d.free("device", "mlx_device_free", func(l *library) func(uintptr) int32 { return l.deviceFree })
}

// String is MLX's name for the device ("Device(cpu, 0)").
func (d *Device) String() string {
	return d.describe("device", "mlx_device_tostring", func(l *library) func(*uintptr, uintptr) int32 { return l.deviceToString })
}

// DeviceCount is the number of devices of type t (mlx-c 0.5.0 and later).
func DeviceCount(t DeviceType) (int, error) {
	l, err := api()
	if err != nil {
		return 0, err
	}
	if err := l.optional(l.deviceCount != nil, "mlx_device_count"); err != nil {
		return 0, err
	}
	var n int32
	err = call("mlx_device_count", func() int32 { return l.deviceCount(&n, int32(t)) })
	return int(n), err
}

// Available reports whether MLX can run on d (mlx-c 0.5.0 and later).
func (d *Device) Available() (bool, error) {
	l, err := api()
	if err != nil {
		return false, err
	}
	if err := l.optional(l.deviceAvailable != nil, "mlx_device_is_available"); err != nil {
		return false, err
	}
	h, err := d.live("device")
	if err != nil {
		return false, err
	}
	var ok bool
	err = call("mlx_device_is_available", func() int32 { return l.deviceAvailable(&ok, h) })
	return ok, err
}

// DeviceInfo is what MLX reports about a device: its string and size
// properties by key (CPU: device_name, architecture; Metal adds
// memory_size, max_recommended_working_set_size and others).
type DeviceInfo struct {
	Strings map[string]string
	Sizes   map[string]uint64
}

// infoKeys are the keys Info asks for.
var infoKeys = []string{"device_name", "architecture", "memory_size", "max_recommended_working_set_size", "max_buffer_length"}

// Info reads the device's properties (mlx-c 0.5.0 and later).
func (d *Device) Info() (DeviceInfo, error) {
	out := DeviceInfo{Strings: map[string]string{}, Sizes: map[string]uint64{}}
	l, err := api()
	if err != nil {
		return out, err
	}
	if err := l.optional(l.deviceInfoGet != nil, "mlx_device_info_get"); err != nil {
		return out, err
	}
	h, err := d.live("device")
	if err != nil {
		return out, err
	}
	info := l.deviceInfoNew()
	err = call("mlx_device_info_get", func() int32 { return l.deviceInfoGet(&info, h) })
	for _, k := range infoKeys {
		if err != nil {
			break
		}
		key := append([]byte(k), 0)
		var has, isStr bool
		if err = call("mlx_device_info_has_key", func() int32 { return l.deviceInfoHasKey(&has, info, &key[0]) }); err != nil || !has {
			continue
		}
		if err = call("mlx_device_info_is_string", func() int32 { return l.deviceInfoIsStr(&isStr, info, &key[0]) }); err != nil {
			break
		}
		if isStr {
			var v *byte
			err = call("mlx_device_info_get_string", func() int32 { return l.deviceInfoString(&v, info, &key[0]) })
			out.Strings[k] = goString(v)
		} else {
			var v uintptr
			err = call("mlx_device_info_get_size", func() int32 { return l.deviceInfoSize(&v, info, &key[0]) })
			out.Sizes[k] = uint64(v)
		}
	}
	if ferr := call("mlx_device_info_free", func() int32 { return l.deviceInfoFree(info) }); err == nil {
		err = ferr
	}
	return out, err
}

// Stream is an mlx_stream: where MLX schedules the ops given it.
type Stream struct{ handle }

func newStream(name string, f func() uintptr) (*Stream, error) {
	h, err := callHandle(name, f)
	if err != nil {
		return nil, err
	}
	s := &Stream{}
	s.handle = newHandle(s, h)
	return s, nil
}

// DefaultCPUStream is MLX's default stream on the CPU.
func DefaultCPUStream() (*Stream, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	return newStream("mlx_default_cpu_stream_new", l.defaultCPUStream)
}

// DefaultGPUStream is MLX's default stream on the GPU; an error where MLX
// has no GPU backend.
func DefaultGPUStream() (*Stream, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	return newStream("mlx_default_gpu_stream_new", l.defaultGPUStream)
}

// NewStream is a new stream on d.
func NewStream(d *Device) (*Stream, error) {
	l, err := api()
	if err != nil {
		return nil, err
	}
	h, err := d.live("device")
	if err != nil {
		return nil, err
	}
	return newStream("mlx_stream_new_device", func() uintptr { return l.streamNewDevice(h) })
}

// Free releases the stream handle.
func (s *Stream) Free() error {
	return s.free("stream", "mlx_stream_free", func(l *library) func(uintptr) int32 { return l.streamFree })
}

// Synchronize waits for everything scheduled on s.
func (s *Stream) Synchronize() error {
	l, err := api()
	if err != nil {
		return err
	}
	h, err := s.live("stream")
	if err != nil {
		return err
	}
	return call("mlx_synchronize", func() int32 { return l.synchronize(h) })
}

// String is MLX's name for the stream.
func (s *Stream) String() string {
	return s.describe("stream", "mlx_stream_tostring", func(l *library) func(*uintptr, uintptr) int32 { return l.streamToString })
}

// Version is the MLX version libmlxc was built with ("0.31.2").
func Version() (string, error) {
	l, err := api()
	if err != nil {
		return "", err
	}
	return toString("mlx_version", l.version)
}

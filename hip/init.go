package hip

import "github.com/hipgo/hipgo/internal/dynlib"

type initAPI struct {
	// hipError_t hipInit(unsigned int flags);
	hipInit func(flags uint32) Code
	// hipError_t hipDriverGetVersion(int* driverVersion);
	hipDriverGetVersion func(v *int32) Code
	// hipError_t hipRuntimeGetVersion(int* runtimeVersion);
	hipRuntimeGetVersion func(v *int32) Code
}

func (a *initAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipInit"}, Fn: &a.hipInit},
		{Names: []string{"hipDriverGetVersion"}, Fn: &a.hipDriverGetVersion},
		{Names: []string{"hipRuntimeGetVersion"}, Fn: &a.hipRuntimeGetVersion},
	}
}

// Init initialises the runtime (hipInit(0)). On a machine without an AMD GPU
// it fails quickly: ROCm 5.2 returns hipErrorInvalidDevice (101) in a few
// microseconds, since the HSA runtime cannot open /dev/kfd.
func Init() error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipInit", a.hipInit(0))
}

// RuntimeVersion returns HIP_VERSION of the loaded runtime
// (hipRuntimeGetVersion): major·10⁷ + minor·10⁵ + patch, e.g. 50221153 for
// 5.2.21153. It works without a GPU.
func RuntimeVersion() (int, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("hipRuntimeGetVersion", a.hipRuntimeGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DriverVersion returns the version hipDriverGetVersion reports, in the
// same encoding as RuntimeVersion. It works without a GPU.
func DriverVersion() (int, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("hipDriverGetVersion", a.hipDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SplitVersion splits a HIP_VERSION number into its parts.
func SplitVersion(v int) (major, minor, patch int) {
	return v / 10_000_000, v / 100_000 % 100, v % 100_000
}

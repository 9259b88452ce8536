package cuda

import "github.com/hipgo/hipgo/internal/dynlib"

// initAPI: driver initialisation and version.
type initAPI struct {
	// CUresult cuInit(unsigned int Flags);
	cuInit func(flags uint32) Code
	// CUresult cuDriverGetVersion(int *driverVersion);
	cuDriverGetVersion func(v *int32) Code
}

func (a *initAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuInit"}, Fn: &a.cuInit},
		{Names: []string{"cuDriverGetVersion"}, Fn: &a.cuDriverGetVersion},
	}
}

// Init initialises the driver (cuInit(0); the flags must be 0). It must
// succeed before any other call but ErrorName, ErrorString and DriverVersion.
// Machines without an NVIDIA GPU typically fail here with ErrNoDevice.
func Init() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuInit", d.cuInit(0))
}

// DriverVersion returns the CUDA version the driver supports, as
// 1000*major + 10*minor (13000 for CUDA 13.0). It works before Init.
func DriverVersion() (int, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

package hsa

import "github.com/hipgo/hipgo/internal/dynlib"

type initAPI struct {
	// hsa_status_t hsa_init();
	hsaInit func() Status
	// hsa_status_t hsa_shut_down();
	hsaShutDown func() Status
}

func (a *initAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hsa_init"}, Fn: &a.hsaInit},
		{Names: []string{"hsa_shut_down"}, Fn: &a.hsaShutDown},
	}
}

// Init takes a reference on the HSA runtime (hsa_init). The runtime is
// reference-counted and shared with HIP (see Load), so Init before or after
// hipInit is safe, and each successful Init must be paired with one
// ShutDown. Without an AMD GPU (no /dev/kfd) ROCm 5.2 returns
// HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008).
func Init() error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hsa_init", a.hsaInit())
}

// ShutDown drops the reference Init took (hsa_shut_down). The runtime only
// shuts down when the count reaches zero, so this does not disturb HIP.
// Without a matching Init it returns HSA_STATUS_ERROR_NOT_INITIALIZED.
func ShutDown() error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hsa_shut_down", a.hsaShutDown())
}

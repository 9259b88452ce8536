package runtime

import "github.com/hipgo/hipgo/runtime/driver"

// builtinDrivers are the backends Open tries, in order.
func builtinDrivers() []driver.Driver {
	return []driver.Driver{rocmDriver{}, cudaDriver{}, metalDriver{}}
}

package runtime

import "github.com/hipgo/hipgo/runtime/driver"

// metalDriver is the Metal backend (backend_metal_darwin.go). Off macOS
// there is no Metal: DeviceCount says so without loading anything
// (backend_metal_other.go).
type metalDriver struct{}

func (metalDriver) Kind() driver.Kind { return driver.Metal }

func (metalDriver) DeviceCount() (int, error) { return metalDeviceCount() }

func (metalDriver) Open(ordinal int) (driver.Device, error) { return metalOpen(ordinal) }

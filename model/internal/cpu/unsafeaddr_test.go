package cpu

import "unsafe"

func unsafeAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// faultSink keeps the fault tests' loads from being optimized away.
var faultSink byte

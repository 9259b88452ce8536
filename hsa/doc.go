// Package hsa is a thin, cgo-free binding (purego) of the parts of ROCm's HSA
// runtime (libhsa-runtime64) that hipgo needs besides HIP: the agent list
// (the gfx arch of each GPU, read without trusting HIP's struct layouts) and
// the system-event handler that turns GPU memory faults and hardware
// exceptions into Go values instead of ROCr's default abort().
//
// Every call returns its hsa_status_t as a checked error: an *Error naming
// the call, whose Status matches the exported sentinels with errors.Is
// (errors.Is(err, hsa.ErrNotInitialized)). The status table is generated
// from the ROCm 5.2 headers (zcodes.go) and checked against the library's
// own hsa_status_string; statuses later releases add are in
// statuses_newer.go with the release that adds them. Library code here never
// panics on bad input: event bytes that cannot be decoded are an error.
//
// The package knows nothing of HIP. libamdhip64 loads libhsa-runtime64.so.1
// itself, and because both use that soname the process holds one HSA
// runtime, whose hsa_init reference count HIP and this package share.
package hsa

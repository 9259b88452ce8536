package hsa

// Statuses that ROCr releases after 5.2 add to hsa_ext_amd.h. zcodes.go comes
// from the 5.2 headers, so these are written by hand, each with the release
// whose header first has it (checked in ROCm/ROCR-Runtime's tags and
// ROCm/rocm-systems' release/rocm-rel-7.0 branch):
//
//   - 45 HSA_STATUS_ERROR_OUT_OF_REGISTERS: rocm-5.6.0 (absent in 5.5.0).
//   - 46 HSA_STATUS_ERROR_RESOURCE_BUSY: rocm-6.2.0 (absent in 6.1.x).
//   - 47 HSA_STATUS_ERROR_NOT_SUPPORTED: in rocm-rel-7.0, absent in 6.2.4;
//     6.3/6.4 were not checked, so "ROCm 7.0" is an upper bound.
const (
	// ErrOutOfRegisters is HSA_STATUS_ERROR_OUT_OF_REGISTERS (0x2d), ROCm 5.6.
	ErrOutOfRegisters Status = 0x2d
	// ErrResourceBusy is HSA_STATUS_ERROR_RESOURCE_BUSY (0x2e), ROCm 6.2.
	ErrResourceBusy Status = 0x2e
	// ErrNotSupported is HSA_STATUS_ERROR_NOT_SUPPORTED (0x2f), by ROCm 7.0.
	ErrNotSupported Status = 0x2f
)

type newerStatus struct {
	Status     Status
	Name       string
	Since      string
	SinceMajor int
	SinceMinor int
}

var newerStatuses = []newerStatus{
	{ErrOutOfRegisters, "HSA_STATUS_ERROR_OUT_OF_REGISTERS", "ROCm 5.6", 5, 6},
	{ErrResourceBusy, "HSA_STATUS_ERROR_RESOURCE_BUSY", "ROCm 6.2", 6, 2},
	{ErrNotSupported, "HSA_STATUS_ERROR_NOT_SUPPORTED", "ROCm 7.0", 7, 0},
}

package hip

// zcodes.go is generated from Debian's ROCm 5.2 header (libamdhip64-dev).
// TestGeneratedCodesReproduce runs this line into a temporary file and
// requires the committed file to match byte for byte.
//go:generate go run ../tools/gencodes -lang=hip -header=/usr/include/hip/hip_runtime_api.h -o=zcodes.go

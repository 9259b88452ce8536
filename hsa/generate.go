package hsa

// zcodes.go is generated from Debian's ROCm 5.2 headers (libhsa-runtime-dev).
// TestGeneratedStatusesReproduce runs this line into a temporary file and
// requires the committed file to match byte for byte.
//go:generate go run ../tools/gencodes -lang=hsa -header=/usr/include/hsa/hsa.h -header=/usr/include/hsa/hsa_ext_amd.h -o=zcodes.go

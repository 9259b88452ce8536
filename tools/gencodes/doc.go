// Command gencodes writes the status-code tables of the hip and hsa bindings
// from the vendor headers, the way x/sys/unix generates its errno table:
//
//	gencodes -lang=hip -header=/usr/include/hip/hip_runtime_api.h -o=zcodes.go
//	gencodes -lang=hsa -header=/usr/include/hsa/hsa.h -header=/usr/include/hsa/hsa_ext_amd.h -o=zcodes.go
//
// For hip it reads the hipError_t enum; for hsa every HSA_STATUS_* enumerator
// (hsa_status_t in hsa.h and the additions in hsa_ext_amd.h). Each distinct
// value gets the name of its first enumerator (later ones are the header's
// deprecated aliases and get a constant but not the name), and every
// enumerator gets an exported Go constant. The bindings' go:generate lines run
// it; their tests run it again into a temporary file and require the committed
// file to match byte for byte.
package main

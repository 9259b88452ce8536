// Package cubin reads what hipgo checks in a CUDA cubin, the ELF file that
// NVIDIA's ptxas writes from PTX: the SM its machine code is for (and
// whether it is an arch-specific "a" build, which only that SM runs) and the
// names of its kernel entry points. kernels/build ships cubins beside the
// PTX they were compiled from so that a GPU of that SM loads machine code
// instead of having the driver compile the PTX at every cold start; the
// kernels package tests hold each cubin to its PTX with this reader.
//
// The reader is minimal and validating: every offset and count is checked
// against the file length before use, so a corrupt file gives an error,
// never a panic. Go's debug/elf refuses cubins (their e_version is 0x81),
// hence a reader of its own.
package cubin

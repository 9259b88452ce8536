package codeobj_test

import (
	"fmt"
	"os"

	"github.com/hipgo/hipgo/kernels/codeobj"
)

// Parse a shipped code object and print what a launcher checks.
func ExampleParse() {
	b, err := os.ReadFile("../build/testkernels/gfx1100.hsaco")
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := codeobj.Parse(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Processor, "code object", f.CodeObjectVersion)
	k, _ := f.Kernel("bounded_fill_u32")
	fmt.Println(k.Name, "max block", k.MaxFlatWorkgroupSize, "kernarg", k.KernargSegmentSize, "wave", k.WavefrontSize)
	for _, a := range k.Args {
		fmt.Println(" ", a.Offset, a.Size, a.ValueKind)
	}
	// Output:
	// gfx1100 code object 4
	// bounded_fill_u32 max block 256 kernarg 16 wave 32
	//   0 8 global_buffer
	//   8 4 by_value
	//   12 4 by_value
}

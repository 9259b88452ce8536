package ptx_test

import (
	"fmt"

	"github.com/hipgo/hipgo/kernels/ptx"
)

// Parse a small module and print each kernel's parameter layout.
func ExampleParse() {
	src := `
.version 7.8
.target sm_90
.address_size 64
.visible .entry scale(
	.param .u64 scale_param_0,
	.param .f32 scale_param_1,
	.param .align 8 .b8 scale_param_2[16]
)
.maxntid 256, 1, 1
{
	ret;
}
`
	m, err := ptx.Parse([]byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	k, _ := m.Kernel("scale")
	fmt.Println(m.Target, "PTX", m.Version, k.Name, "max threads", k.MaxThreads(), "param bytes", k.ParamBytes)
	for _, p := range k.Params {
		fmt.Printf("  %s .%s offset %d size %d align %d\n", p.Name, p.Type, p.Offset, p.Size, p.Align)
	}
	// Output:
	// sm_90 PTX 7.8 scale max threads 256 param bytes 32
	//   scale_param_0 .u64 offset 0 size 8 align 8
	//   scale_param_1 .f32 offset 8 size 4 align 4
	//   scale_param_2 .b8 offset 16 size 16 align 8
}

package metal

import (
	"github.com/ebitengine/purego/objc"
)

// Library is a compiled MTLLibrary (retained).
type Library struct {
	l  *lib
	id objc.ID
}

// Function is newFunctionWithName:. A name the library lacks is an *Error
// wrapping ErrNilResult.
func (lb *Library) Function(name string) (*Function, error) {
	l := lb.l
	var fn objc.ID
	l.withPool(func() {
		str := l.newString([]byte(name))
		defer l.release(str)
		fn = l.send.idID(lb.id, l.sels[selNewFunctionWithName], str)
	})
	if fn == 0 {
		return nil, &Error{Call: "newFunctionWithName:", Description: "no function " + name + " in the library", Err: ErrNilResult}
	}
	return &Function{l: l, id: fn, name: name}, nil
}

// Release releases the library.
func (lb *Library) Release() { lb.l.release(lb.id) }

// Function is an MTLFunction (retained).
type Function struct {
	l    *lib
	id   objc.ID
	name string
}

// Name is the function's name.
func (f *Function) Name() string { return f.name }

// Release releases the function.
func (f *Function) Release() { f.l.release(f.id) }

// ComputePipelineState is an MTLComputePipelineState (retained) and the
// limits Metal computed for it.
type ComputePipelineState struct {
	l    *lib
	id   objc.ID
	name string
	// MaxTotalThreadsPerThreadgroup bounds a dispatch's threads per
	// threadgroup for this pipeline (it can be below the device's limit when
	// the kernel uses many registers).
	MaxTotalThreadsPerThreadgroup uint64
	// ThreadExecutionWidth is the SIMD-group width (32 on Apple GPUs).
	ThreadExecutionWidth uint64
	// StaticThreadgroupMemoryLength is the threadgroup memory the kernel
	// declares itself, beyond what SetThreadgroupMemoryLength adds.
	StaticThreadgroupMemoryLength uint64
}

// Release releases the pipeline state.
func (p *ComputePipelineState) Release() { p.l.release(p.id) }

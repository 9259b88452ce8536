package metal

import (
	"github.com/ebitengine/purego/objc"
)

// Device is an MTLDevice (retained).
type Device struct {
	l  *lib
	id objc.ID
}

// SystemDefaultDevice is MTLCreateSystemDefaultDevice: the Mac's GPU, or an
// error wrapping ErrNoDevice when it has none Metal can use.
func SystemDefaultDevice() (*Device, error) {
	l, err := loaded()
	if err != nil {
		return nil, err
	}
	var id objc.ID
	l.withPool(func() { id = l.createSystemDefaultDevice() }) // a Create function: +1
	if id == 0 {
		return nil, &Error{Call: "MTLCreateSystemDefaultDevice", Err: ErrNoDevice}
	}
	return &Device{l: l, id: id}, nil
}

// Name is the device's name, e.g. "Apple M2 Pro".
func (d *Device) Name() string {
	var s string
	d.l.withPool(func() { s = d.l.goString(d.l.send.id(d.id, d.l.sels[selName])) })
	return s
}

// Limits reads the device's limits.
func (d *Device) Limits() Limits {
	l, s := d.l, d.l.sels
	return Limits{
		MaxThreadsPerThreadgroup:     l.send.size(d.id, s[selMaxThreadsPerThreadgroup]),
		MaxThreadgroupMemoryLength:   l.send.u64(d.id, s[selMaxThreadgroupMemoryLength]),
		MaxBufferLength:              l.send.u64(d.id, s[selMaxBufferLength]),
		RecommendedMaxWorkingSetSize: l.send.u64(d.id, s[selRecommendedMaxWorkingSetSize]),
		HasUnifiedMemory:             l.send.boolean(d.id, s[selHasUnifiedMemory]),
		RegistryID:                   l.send.u64(d.id, s[selRegistryID]),
	}
}

// CurrentAllocatedSize is the bytes the process has allocated on the device.
func (d *Device) CurrentAllocatedSize() uint64 {
	return d.l.send.u64(d.id, d.l.sels[selCurrentAllocatedSize])
}

// Family is the newest GPU family the device supports ("apple9", "mac2"),
// or "" when it answers none of them.
func (d *Device) Family() string {
	for _, f := range appleFamilies {
		if d.l.send.boolU64(d.id, d.l.sels[selSupportsFamily], f.family) {
			return f.name
		}
	}
	return ""
}

// NewBuffer is newBufferWithLength:options: with shared storage (CPU and GPU
// see the same memory; Apple silicon has no other kind worth having here)
// and tracked hazards. Metal answers nil when memory is short: an *Error
// wrapping ErrNilResult.
func (d *Device) NewBuffer(length uint64) (*Buffer, error) {
	id := d.l.send.idU64U64(d.id, d.l.sels[selNewBufferWithLengthOptions], length, resourceStorageModeShared|resourceHazardTrackingDefault)
	if id == 0 {
		return nil, &Error{Call: "newBufferWithLength:options:", Err: ErrNilResult}
	}
	b := &Buffer{l: d.l, id: id, length: length}
	b.contents = d.l.send.ptr(id, d.l.sels[selContents])
	if b.contents == nil {
		b.Release()
		return nil, &Error{Call: "contents", Err: ErrNilResult}
	}
	return b, nil
}

// NewCommandQueue is newCommandQueue.
func (d *Device) NewCommandQueue() (*CommandQueue, error) {
	id := d.l.send.id(d.id, d.l.sels[selNewCommandQueue])
	if id == 0 {
		return nil, &Error{Call: "newCommandQueue", Err: ErrNilResult}
	}
	return &CommandQueue{l: d.l, id: id}, nil
}

// NewLibraryWithSource compiles MSL source (newLibraryWithSource:options:
// error:) with fast math off: MTLMathModeSafe where the OS has mathMode
// (macOS 15), else fastMathEnabled = NO. A refused source is a
// *CompileError carrying the compiler's log. Warnings on a source that
// compiled are not errors.
func (d *Device) NewLibraryWithSource(src []byte) (*Library, error) {
	l, s := d.l, d.l.sels
	var lib objc.ID
	var cerr error
	l.withPool(func() {
		str := l.newString(src)
		if str == 0 {
			cerr = &Error{Call: "initWithBytes:length:encoding:", Description: "the MSL source is not UTF-8", Err: ErrNilResult}
			return
		}
		defer l.release(str)
		opts := l.send.id(l.send.id(objc.ID(l.classes["MTLCompileOptions"]), s[selAlloc]), s[selInit])
		if opts == 0 {
			cerr = &Error{Call: "MTLCompileOptions init", Err: ErrNilResult}
			return
		}
		defer l.release(opts)
		if l.send.boolSEL(opts, s[selRespondsToSelector], s[selSetMathMode]) {
			l.send.voidU64(opts, s[selSetMathMode], mathModeSafe)
		} else {
			l.send.voidBool(opts, s[selSetFastMathEnabled], false)
		}
		var nserr objc.ID
		lib = l.send.idIDIDErr(d.id, s[selNewLibraryWithSourceOptionsError], str, opts, &nserr)
		if lib == 0 {
			if e := l.nsError("newLibraryWithSource:options:error:", nserr); e != nil {
				cerr = &CompileError{Code: e.Code, Log: e.Description}
			} else {
				cerr = &CompileError{Log: "(Metal gave no error)"}
			}
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return &Library{l: l, id: lib}, nil
}

// NewComputePipelineState is newComputePipelineStateWithFunction:error:.
func (d *Device) NewComputePipelineState(fn *Function) (*ComputePipelineState, error) {
	l, s := d.l, d.l.sels
	var p objc.ID
	var perr error
	l.withPool(func() {
		var nserr objc.ID
		p = l.send.idIDErr(d.id, s[selNewComputePipelineStateWithFunctionError], fn.id, &nserr)
		if p == 0 {
			if e := l.nsError("newComputePipelineStateWithFunction:error:", nserr); e != nil {
				perr = e
			} else {
				perr = &Error{Call: "newComputePipelineStateWithFunction:error:", Err: ErrNilResult}
			}
		}
	})
	if perr != nil {
		return nil, perr
	}
	return &ComputePipelineState{
		l: l, id: p, name: fn.name,
		MaxTotalThreadsPerThreadgroup: l.send.u64(p, s[selMaxTotalThreadsPerThreadgroup]),
		ThreadExecutionWidth:          l.send.u64(p, s[selThreadExecutionWidth]),
		StaticThreadgroupMemoryLength: l.send.u64(p, s[selStaticThreadgroupMemoryLength]),
	}, nil
}

// Release releases the device.
func (d *Device) Release() { d.l.release(d.id) }

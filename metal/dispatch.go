package metal

import "fmt"

// Size is MTLSize: three NSUInteger.
type Size struct{ Width, Height, Depth uint64 }

// Count is the number of threads (or threadgroups) in the shape.
func (s Size) Count() uint64 { return s.Width * s.Height * s.Depth }

// Limits are the device's fixed limits.
type Limits struct {
	MaxThreadsPerThreadgroup     Size   // per dimension
	MaxThreadgroupMemoryLength   uint64 // bytes of threadgroup memory per threadgroup
	MaxBufferLength              uint64
	RecommendedMaxWorkingSetSize uint64 // what Metal suggests the process keep resident
	HasUnifiedMemory             bool
	RegistryID                   uint64
}

// CheckDispatch says why a dispatch of threads per threadgroup, with
// threadgroupBytes of threadgroup memory set by SetThreadgroupMemoryLength,
// cannot run a pipeline whose limits are maxTotal (its
// maxTotalThreadsPerThreadgroup) and static (its
// staticThreadgroupMemoryLength) on a device with limits dev: an *Error
// wrapping ErrInvalidLaunch, or nil. It is the check CUDA and HIP make of a
// block size, made before Metal sees the dispatch.
func CheckDispatch(threads Size, threadgroupBytes, maxTotal, static uint64, dev Limits) error {
	fail := func(format string, args ...any) error {
		return &Error{Call: "dispatchThreadgroups:threadsPerThreadgroup:", Description: fmt.Sprintf(format, args...), Err: ErrInvalidLaunch}
	}
	m := dev.MaxThreadsPerThreadgroup
	switch {
	case threads.Width == 0 || threads.Height == 0 || threads.Depth == 0:
		return fail("threadgroup %dx%dx%d has a zero dimension", threads.Width, threads.Height, threads.Depth)
	case m.Count() > 0 && (threads.Width > m.Width || threads.Height > m.Height || threads.Depth > m.Depth):
		return fail("threadgroup %dx%dx%d exceeds the device's %dx%dx%d", threads.Width, threads.Height, threads.Depth, m.Width, m.Height, m.Depth)
	case maxTotal > 0 && threads.Count() > maxTotal:
		return fail("threadgroup of %d threads exceeds the pipeline's maxTotalThreadsPerThreadgroup %d", threads.Count(), maxTotal)
	case dev.MaxThreadgroupMemoryLength > 0 && threadgroupBytes+static > dev.MaxThreadgroupMemoryLength:
		return fail("%d bytes of threadgroup memory (%d set, %d static) exceed the device's %d", threadgroupBytes+static, threadgroupBytes, static, dev.MaxThreadgroupMemoryLength)
	}
	return nil
}

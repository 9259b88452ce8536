package cuda

import (
	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Stream is a CUstream. The zero Stream is the context's legacy default
// stream, which synchronises with every blocking stream.
type Stream uintptr

// StreamFlags are the CU_STREAM_* creation flags.
type StreamFlags uint32

// CUstream_flags values, checked against cuda.h 13.0.
const (
	StreamDefault     StreamFlags = 0x0
	StreamNonBlocking StreamFlags = 0x1 // no implicit synchronisation with the default stream
)

// streamAPI: stream lifetime and completion.
type streamAPI struct {
	// CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
	cuStreamCreate func(s *Stream, flags uint32) Code
	// CUresult cuStreamDestroy_v2(CUstream hStream);
	cuStreamDestroy func(s Stream) Code
	// CUresult cuStreamSynchronize(CUstream hStream);
	cuStreamSynchronize func(s Stream) Code

	// Hot call, made through purego.SyscallN.
	// CUresult cuStreamQuery(CUstream hStream);
	cuStreamQuery uintptr
}

func (a *streamAPI) bind() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"cuStreamCreate"}, Fn: &a.cuStreamCreate},
		// cuda.h: #define cuStreamDestroy cuStreamDestroy_v2 (same signature).
		{Names: []string{"cuStreamDestroy_v2", "cuStreamDestroy"}, Fn: &a.cuStreamDestroy},
		{Names: []string{"cuStreamSynchronize"}, Fn: &a.cuStreamSynchronize},
		{Names: []string{"cuStreamQuery"}, Addr: &a.cuStreamQuery},
	}
}

// StreamCreate creates a stream in the current context.
func StreamCreate(flags StreamFlags) (Stream, error) {
	d, err := api()
	if err != nil {
		return 0, err
	}
	var s Stream
	if err := check("cuStreamCreate", d.cuStreamCreate(&s, uint32(flags))); err != nil {
		return 0, err
	}
	return s, nil
}

// Destroy destroys the stream; work already enqueued still completes.
func (s Stream) Destroy() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuStreamDestroy_v2", d.cuStreamDestroy(s))
}

// Synchronize blocks until all work on s has finished and returns its first
// error. It cannot be interrupted: the runtime layer polls Query instead.
func (s Stream) Synchronize() error {
	d, err := api()
	if err != nil {
		return err
	}
	return check("cuStreamSynchronize", d.cuStreamSynchronize(s))
}

// Query reports whether all work on s has finished: (true, nil) when it has,
// (false, nil) while work is pending (CUDA_ERROR_NOT_READY), and an error
// (sticky faults included) otherwise.
func (s Stream) Query() (done bool, err error) {
	d, err := api()
	if err != nil {
		return false, err
	}
	r, _, _ := purego.SyscallN(d.cuStreamQuery, uintptr(s))
	return readiness("cuStreamQuery", result(r))
}

// readiness maps a query result to (done, err).
func readiness(call string, c Code) (bool, error) {
	switch c {
	case Success:
		return true, nil
	case ErrNotReady:
		return false, nil
	}
	return false, &Error{Call: call, Code: c}
}

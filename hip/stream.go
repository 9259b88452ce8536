package hip

import (
	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Stream is a hipStream_t. The zero Stream is the null (default) stream.
type Stream uintptr

// StreamFlags are hipStreamCreateWithFlags' flags.
type StreamFlags uint32

const (
	StreamDefault     StreamFlags = 0x0 // hipStreamDefault: synchronises with the null stream
	StreamNonBlocking StreamFlags = 0x1 // hipStreamNonBlocking
)

type streamAPI struct {
	// hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags);
	hipStreamCreateWithFlags func(s *Stream, flags StreamFlags) Code
	// hipError_t hipStreamDestroy(hipStream_t stream);
	hipStreamDestroy func(s Stream) Code
	// hipError_t hipStreamSynchronize(hipStream_t stream);
	hipStreamSynchronize func(s Stream) Code
	// hipError_t hipStreamQuery(hipStream_t stream);  (hot: polled by the fault monitor)
	hipStreamQuery uintptr
}

func (a *streamAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hipStreamCreateWithFlags"}, Fn: &a.hipStreamCreateWithFlags},
		{Names: []string{"hipStreamDestroy"}, Fn: &a.hipStreamDestroy},
		{Names: []string{"hipStreamSynchronize"}, Fn: &a.hipStreamSynchronize},
		{Names: []string{"hipStreamQuery"}, Addr: &a.hipStreamQuery},
	}
}

// StreamCreateWithFlags creates a stream on the current device.
func StreamCreateWithFlags(flags StreamFlags) (Stream, error) {
	a, err := get()
	if err != nil {
		return 0, err
	}
	var s Stream
	if err := check("hipStreamCreateWithFlags", a.hipStreamCreateWithFlags(&s, flags)); err != nil {
		return 0, err
	}
	return s, nil
}

// StreamDestroy destroys a stream after its work completes.
func StreamDestroy(s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipStreamDestroy", a.hipStreamDestroy(s))
}

// StreamSynchronize waits for all work on s. After a fault it may not
// return (anchors §2.3); the fault monitor polls StreamQuery instead.
func StreamSynchronize(s Stream) error {
	a, err := get()
	if err != nil {
		return err
	}
	return check("hipStreamSynchronize", a.hipStreamSynchronize(s))
}

// StreamQuery reports whether all work on s has completed: (true, nil) when
// done, (false, nil) for hipErrorNotReady, and an *Error for anything else
// (a fault on the stream included). It is called through its raw address
// (no reflection), and allocates only when it returns an error.
func StreamQuery(s Stream) (done bool, err error) {
	a, err := get()
	if err != nil {
		return false, err
	}
	r, _, _ := purego.SyscallN(a.hipStreamQuery, uintptr(s))
	return queryResult("hipStreamQuery", Code(int32(r)))
}

// queryResult maps a query's code to (done, err).
func queryResult(call string, c Code) (bool, error) {
	switch c {
	case Success:
		return true, nil
	case ErrNotReady:
		return false, nil
	}
	return false, &Error{Call: call, Code: c}
}

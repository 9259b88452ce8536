package metal

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// The typed objc_msgSend variants, bound once at Load (objc.Send registers a
// function per call, which costs reflection every time). Each is named by
// its return and argument types; the selector table says which selectors
// use which.
type msgSend struct {
	id            func(objc.ID, objc.SEL) objc.ID
	idID          func(objc.ID, objc.SEL, objc.ID) objc.ID
	idU64U64      func(objc.ID, objc.SEL, uint64, uint64) objc.ID
	idPtrU64U64   func(objc.ID, objc.SEL, unsafe.Pointer, uint64, uint64) objc.ID
	idIDErr       func(objc.ID, objc.SEL, objc.ID, *objc.ID) objc.ID
	idIDIDErr     func(objc.ID, objc.SEL, objc.ID, objc.ID, *objc.ID) objc.ID
	ptr           func(objc.ID, objc.SEL) unsafe.Pointer
	u64           func(objc.ID, objc.SEL) uint64
	i64           func(objc.ID, objc.SEL) int64
	f64           func(objc.ID, objc.SEL) float64
	boolean       func(objc.ID, objc.SEL) bool
	boolU64       func(objc.ID, objc.SEL, uint64) bool
	boolSEL       func(objc.ID, objc.SEL, objc.SEL) bool
	size          func(objc.ID, objc.SEL) Size
	void          func(objc.ID, objc.SEL)
	voidID        func(objc.ID, objc.SEL, objc.ID)
	voidU64       func(objc.ID, objc.SEL, uint64)
	voidBool      func(objc.ID, objc.SEL, bool)
	voidU64U64    func(objc.ID, objc.SEL, uint64, uint64)
	voidIDU64U64  func(objc.ID, objc.SEL, objc.ID, uint64, uint64)
	voidPtrU64U64 func(objc.ID, objc.SEL, unsafe.Pointer, uint64, uint64)
	voidSizeSize  func(objc.ID, objc.SEL, Size, Size)
}

func (m *msgSend) register(addr uintptr) {
	for _, fn := range []any{
		&m.id, &m.idID, &m.idU64U64, &m.idPtrU64U64, &m.idIDErr, &m.idIDIDErr,
		&m.ptr, &m.u64, &m.i64, &m.f64, &m.boolean, &m.boolU64, &m.boolSEL, &m.size,
		&m.void, &m.voidID, &m.voidU64, &m.voidBool, &m.voidU64U64, &m.voidIDU64U64,
		&m.voidPtrU64U64, &m.voidSizeSize,
	} {
		purego.RegisterFunc(fn, addr)
	}
}

// withPool runs fn inside an autorelease pool on one OS thread: objects
// Metal autoreleases (command buffers, encoders, names, errors) are freed
// when it returns, and push and pop happen on the same thread as the pool
// requires.
func (l *lib) withPool(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := l.poolPush()
	defer l.poolPop(pool)
	fn()
}

// goString copies an NSString into Go ("" for nil).
func (l *lib) goString(s objc.ID) string {
	if s == 0 {
		return ""
	}
	p := l.send.ptr(s, l.sels[selUTF8String])
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// newString makes an NSString (+1) from Go bytes; the caller releases it.
func (l *lib) newString(b []byte) objc.ID {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	s := l.send.id(objc.ID(l.classes["NSString"]), l.sels[selAlloc])
	return l.send.idPtrU64U64(s, l.sels[selInitWithBytesLengthEncoding], p, uint64(len(b)), nsUTF8StringEncoding)
}

func (l *lib) release(id objc.ID) {
	if id != 0 {
		l.send.void(id, l.sels[selRelease])
	}
}

func (l *lib) retain(id objc.ID) objc.ID {
	if id == 0 {
		return 0
	}
	return l.send.id(id, l.sels[selRetain])
}

// nsError turns an NSError into an *Error for call (nil for a nil NSError).
// Callers are inside withPool: domain and description are autoreleased.
func (l *lib) nsError(call string, e objc.ID) *Error {
	if e == 0 {
		return nil
	}
	return &Error{
		Call:        call,
		Domain:      l.goString(l.send.id(e, l.sels[selDomain])),
		Code:        l.send.i64(e, l.sels[selCode]),
		Description: l.goString(l.send.id(e, l.sels[selLocalizedDescription])),
	}
}

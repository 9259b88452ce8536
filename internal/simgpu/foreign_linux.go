//go:build linux

package simgpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Callbacks on threads Go did not create: the C library's pthread_create
// starts a thread whose start routine is a purego callback, exactly how a
// vendor driver's thread calls into Go. One trampoline serves every call
// (purego allows a limited number per process); the argument is a handle.
var foreign struct {
	once   sync.Once
	err    error
	create func(tid unsafe.Pointer, attr uintptr, start uintptr, arg uintptr) int32
	join   func(tid uint64, ret uintptr) int32
	start  uintptr

	mu    sync.Mutex
	next  uintptr
	funcs map[uintptr]func()
}

func loadForeign() error {
	foreign.once.Do(func() {
		var lib uintptr
		for _, name := range []string{"libc.so.6", "libpthread.so.0"} {
			h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			if err == nil {
				lib = h
				break
			}
			foreign.err = err
		}
		if lib == 0 {
			return
		}
		foreign.err = nil
		purego.RegisterLibFunc(&foreign.create, lib, "pthread_create")
		purego.RegisterLibFunc(&foreign.join, lib, "pthread_join")
		foreign.funcs = map[uintptr]func(){}
		foreign.start = purego.NewCallback(func(arg uintptr) uintptr {
			foreign.mu.Lock()
			fn := foreign.funcs[arg]
			delete(foreign.funcs, arg)
			foreign.mu.Unlock()
			if fn != nil {
				fn()
			}
			return 0
		})
	})
	return foreign.err
}

// runOnForeignThread runs fn on a new C thread and waits for it.
func runOnForeignThread(fn func()) error {
	if err := loadForeign(); err != nil {
		return err
	}
	foreign.mu.Lock()
	foreign.next++
	h := foreign.next
	foreign.funcs[h] = fn
	foreign.mu.Unlock()
	tid := new(uint64) // heap, so the C library writes to memory that cannot move
	if rc := foreign.create(unsafe.Pointer(tid), 0, foreign.start, h); rc != 0 {
		foreign.mu.Lock()
		delete(foreign.funcs, h)
		foreign.mu.Unlock()
		return fmt.Errorf("pthread_create: %d", rc)
	}
	if rc := foreign.join(*tid, 0); rc != 0 {
		return fmt.Errorf("pthread_join: %d", rc)
	}
	return nil
}

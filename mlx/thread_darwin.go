package mlx

import (
	"sync"

	"github.com/ebitengine/purego"
)

// pthread_self from libSystem, which every macOS process has loaded.
var self struct {
	once sync.Once
	fn   func() uintptr
}

// threadID identifies the calling OS thread (the caller has locked it).
func threadID() uint64 {
	self.once.Do(func() {
		h, err := purego.Dlopen("/usr/lib/libSystem.B.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			var addr uintptr
			if addr, err = purego.Dlsym(h, "pthread_self"); err == nil {
				purego.RegisterFunc(&self.fn, addr)
			}
		}
	})
	if self.fn == nil {
		return 0 // every thread shares one slot; Load refuses this case
	}
	return uint64(self.fn())
}

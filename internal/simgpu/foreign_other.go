//go:build !linux

package simgpu

import "errors"

func runOnForeignThread(fn func()) error {
	return errors.New("simgpu: foreign-thread callbacks are implemented on linux only")
}

// Package hip is a statuscheck fixture: every line marked "want: <kind>"
// must be reported with that kind, and no other line may be.
package hip

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ebitengine/purego"
)

// Code is a binding status type that does not implement error.
type Code int32

type Error struct{ Code Code }

func (e *Error) Error() string { return "fixture" }

type api struct {
	hipFree func(p uintptr) Code
	addr    uintptr
}

func free(p uintptr) error { return nil }
func code() Code           { return 0 }
func pair() (int, error)   { return 0, nil }
func concrete() *Error     { return nil }
func nothing()             {}
func value() int           { return 0 }

type closer struct{}

func (closer) Close() error { return nil }

func discards(a *api, c closer) {
	free(1)      // want: discarded
	code()       // want: discarded
	pair()       // want: discarded
	concrete()   // want: discarded
	a.hipFree(1) // want: discarded
	c.Close()    // want: discarded
	(free)(2)    // want: discarded
	var cc io.Closer = c
	cc.Close() // want: discarded
	fn := free
	fn(7)            // want: discarded
	defer free(3)    // want: deferred
	defer c.Close()  // want: deferred
	go free(4)       // want: go
	_ = free(5)      // want: blank
	_ = a.hipFree(6) // want: blank
	n, _ := pair()   // want: blank
	_, _ = pair()    // want: blank
	err := errors.New("x")
	_ = err                             // want: blank
	purego.SyscallN(a.addr)             // want: syscalln
	_, _, _ = purego.SyscallN(a.addr)   // want: syscalln
	defer purego.SyscallN(a.addr, 1)    // want: syscalln
	_, r2, _ := purego.SyscallN(a.addr) // want: syscalln
	_ = n + int(r2)
}

var _ = free(8) // want: blank

// clean handles every status and must produce no finding.
func clean(a *api, c closer) error {
	nothing()
	value()
	_ = value()
	_ = Code(3)
	if err := free(1); err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(a.addr)
	if Code(int32(r)) != 0 {
		return errors.New("failed")
	}
	var sb strings.Builder
	sb.WriteString("x")
	fmt.Fprintf(&sb, "%d", 1)
	defer func() {
		if err := c.Close(); err != nil {
			sb.WriteString(err.Error())
		}
	}()
	return fmt.Errorf("%s: %w", sb.String(), free(2))
}

// The interface-check idiom is not a call and not reported.
var _ error = (*Error)(nil)

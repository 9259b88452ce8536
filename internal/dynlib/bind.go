package dynlib

import (
	"fmt"
	"strings"

	"github.com/ebitengine/purego"
)

// Func declares one C function a binding needs.
//
// Exactly one of Fn and Addr is set. Fn points to a Go func variable that
// purego.RegisterFunc fills (convenient, costs reflection per call); Addr points
// to a uintptr that receives the raw address, for hot calls made with
// purego.SyscallN (no reflection). Names are tried in order, so "_v2" variants
// can come first.
type Func struct {
	Names []string
	Fn    any
	Addr  *uintptr
	// Since is empty for a required symbol. For an optional one it names the
	// library version that adds it, e.g. "ROCm 6.0"; a missing optional symbol
	// leaves Fn nil and *Addr zero.
	Since string
}

// MissingSymbolError lists the required symbols a library lacks.
type MissingSymbolError struct {
	Library string
	Path    string
	Missing []string
}

func (e *MissingSymbolError) Error() string {
	return fmt.Sprintf("%s (%s) lacks required symbols: %s (library too old or not the vendor's)",
		e.Library, e.Path, strings.Join(e.Missing, ", "))
}

// Bind resolves every function in the table. It binds all it can and then
// returns a *MissingSymbolError when any required symbol is absent.
func (l *Library) Bind(table []Func) error {
	var missing []string
	for _, f := range table {
		var addr uintptr
		for _, n := range f.Names {
			if a, err := l.Sym(n); err == nil {
				addr = a
				break
			}
		}
		if addr == 0 {
			if f.Since == "" {
				missing = append(missing, strings.Join(f.Names, "|"))
			}
			continue
		}
		if f.Addr != nil {
			*f.Addr = addr
		}
		if f.Fn != nil {
			purego.RegisterFunc(f.Fn, addr)
		}
	}
	if len(missing) > 0 {
		return &MissingSymbolError{Library: l.Name, Path: l.Path, Missing: missing}
	}
	return nil
}

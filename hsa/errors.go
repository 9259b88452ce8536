package hsa

import (
	"fmt"
	"unsafe"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// Status is an hsa_status_t. It is an error in its own right, so the
// sentinels (ErrNotInitialized, ...) work with errors.Is against any *Error.
type Status uint32

// statusName pairs a status with its C name.
type statusName struct {
	status Status
	name   string
}

var statusNames = func() map[Status]string {
	m := make(map[Status]string, len(headerStatuses)+len(newerStatuses))
	for _, s := range headerStatuses {
		m[s.status] = s.name
	}
	for _, s := range newerStatuses {
		if _, ok := m[s.Status]; !ok {
			m[s.Status] = s.Name
		}
	}
	return m
}()

// Name returns the C name ("HSA_STATUS_ERROR_OUT_OF_RESOURCES"), or
// "hsa_status(0x1234)" for a value no header we know defines.
func (s Status) Name() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("hsa_status(%#x)", uint32(s))
}

// Error returns "HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)".
func (s Status) Error() string { return fmt.Sprintf("%s (%#x)", s.Name(), uint32(s)) }

// Error is a failed HSA call: which function, and the status it returned.
type Error struct {
	Call   string
	Status Status
}

// Error returns "hsa_init: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)".
func (e *Error) Error() string { return e.Call + ": " + e.Status.Error() }

// Unwrap returns the Status, so errors.Is(err, hsa.ErrNotInitialized) works.
func (e *Error) Unwrap() error { return e.Status }

// check turns a status into nil or an *Error. HSA_STATUS_INFO_BREAK is not a
// failure either: it is what a traversal returns when its callback stops it.
func check(call string, s Status) error {
	if s == Success || s == InfoBreak {
		return nil
	}
	return &Error{Call: call, Status: s}
}

type errorsAPI struct {
	// hsa_status_t hsa_status_string(hsa_status_t status, const char** status_string);
	hsaStatusString func(s Status, str *unsafe.Pointer) Status
}

func (a *errorsAPI) funcs() []dynlib.Func {
	return []dynlib.Func{{Names: []string{"hsa_status_string"}, Fn: &a.hsaStatusString}}
}

// StatusString returns the library's own text for a status
// (hsa_status_string: "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed
// to allocate ..."). It works before hsa_init succeeds. A status the library
// does not know gives an *Error (HSA_STATUS_ERROR_INVALID_ARGUMENT).
func StatusString(s Status) (string, error) {
	a, err := get()
	if err != nil {
		return "", err
	}
	var p unsafe.Pointer
	if err := check("hsa_status_string", a.hsaStatusString(s, &p)); err != nil {
		return "", err
	}
	return goString(p), nil
}

package hsa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// SystemEventType is an hsa_amd_event_type_t.
type SystemEventType uint32

// The ROCm 5.2 header (hsa_ext_amd.h) defines only the memory fault; the
// others are from later headers, checked in ROCm/ROCR-Runtime: HW_EXCEPTION
// from rocm-6.0.0 ("Handle HW_EXCEPTION events", 2023-11), MEMORY_ERROR from
// ROCm 6.3 (2024-08, absent in rocm-6.2.4). SYSTEM_SHUTDOWN is newer still
// and was not found in a header here (anchors §2.5 lists it as 3); it carries
// no payload that this package reads.
const (
	MemoryFaultEvent    SystemEventType = 0 // HSA_AMD_GPU_MEMORY_FAULT_EVENT
	HWExceptionEvent    SystemEventType = 1 // HSA_AMD_GPU_HW_EXCEPTION_EVENT (ROCm 6.0)
	MemoryErrorEvent    SystemEventType = 2 // HSA_AMD_GPU_MEMORY_ERROR_EVENT (ROCm 6.3)
	SystemShutdownEvent SystemEventType = 3 // HSA_AMD_SYSTEM_SHUTDOWN_EVENT (newer)
)

func (t SystemEventType) String() string {
	switch t {
	case MemoryFaultEvent:
		return "memory fault"
	case HWExceptionEvent:
		return "hardware exception"
	case MemoryErrorEvent:
		return "memory error"
	case SystemShutdownEvent:
		return "system shutdown"
	}
	return fmt.Sprintf("SystemEventType(%d)", uint32(t))
}

// FaultReason is hsa_amd_memory_fault_reason_t: a bit mask, several bits may
// be set for one fault.
type FaultReason uint32

const (
	FaultPageNotPresent FaultReason = 1 << 0  // HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT
	FaultReadOnly       FaultReason = 1 << 1  // HSA_AMD_MEMORY_FAULT_READ_ONLY
	FaultNX             FaultReason = 1 << 2  // HSA_AMD_MEMORY_FAULT_NX
	FaultHostOnly       FaultReason = 1 << 3  // HSA_AMD_MEMORY_FAULT_HOST_ONLY
	FaultDRAMECC        FaultReason = 1 << 4  // HSA_AMD_MEMORY_FAULT_DRAMECC
	FaultImprecise      FaultReason = 1 << 5  // HSA_AMD_MEMORY_FAULT_IMPRECISE
	FaultSRAMECC        FaultReason = 1 << 6  // HSA_AMD_MEMORY_FAULT_SRAMECC
	FaultHang           FaultReason = 1 << 31 // HSA_AMD_MEMORY_FAULT_HANG
)

// faultTexts are ROCr's own words for each reason (runtime.cpp,
// VMFaultHandler), lower-cased to sit inside a Go error.
var faultTexts = []struct {
	bit  FaultReason
	text string
}{
	{FaultPageNotPresent, "page not present or supervisor privilege"},
	{FaultReadOnly, "write access to a read-only page"},
	{FaultNX, "execute access to a page marked NX"},
	{FaultHostOnly, "host access only"},
	{FaultDRAMECC, "DRAM ECC failure"},
	{FaultImprecise, "address may not be exact"},
	{FaultSRAMECC, "SRAM ECC failure"},
	{FaultHang, "generic hang recovery"},
}

func (r FaultReason) String() string { return maskString(uint32(r), faultTexts) }

// ResetCause is hsa_amd_hw_exception_reset_cause_t (a bit mask).
type ResetCause uint32

const (
	CauseGPUHang ResetCause = 1 << 0 // HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG
	CauseECC     ResetCause = 1 << 1 // HSA_AMD_HW_EXCEPTION_CAUSE_ECC
)

var causeTexts = []struct {
	bit  ResetCause
	text string
}{
	{CauseGPUHang, "GPU hang"},
	{CauseECC, "ECC error"},
}

func (c ResetCause) String() string { return maskString(uint32(c), causeTexts) }

// ResetType is hsa_amd_hw_exception_reset_type_t (ROCr marks it unused).
type ResetType uint32

// ResetOther is HSA_AMD_HW_EXCEPTION_RESET_TYPE_OTHER.
const ResetOther ResetType = 1 << 0

// MemoryErrorReason is hsa_amd_memory_error_reason_t (a bit mask).
type MemoryErrorReason uint32

// MemoryInUse is HSA_AMD_MEMORY_ERROR_MEMORY_IN_USE.
const MemoryInUse MemoryErrorReason = 1 << 0

var memErrTexts = []struct {
	bit  MemoryErrorReason
	text string
}{
	{MemoryInUse, "memory in use by a hardware component and cannot be released"},
}

func (r MemoryErrorReason) String() string { return maskString(uint32(r), memErrTexts) }

func maskString[T ~uint32](m uint32, texts []struct {
	bit  T
	text string
}) string {
	if m == 0 {
		return "unknown reason"
	}
	var parts []string
	for _, t := range texts {
		if m&uint32(t.bit) != 0 {
			parts = append(parts, t.text)
			m &^= uint32(t.bit)
		}
	}
	if m != 0 {
		parts = append(parts, fmt.Sprintf("unknown reason bits %#x", m))
	}
	return strings.Join(parts, ", ")
}

// SystemEvent is a decoded hsa_amd_event_t. Which fields mean something
// depends on Type: Address for memory faults and errors, FaultReason for
// memory faults, ResetType/ResetCause for hardware exceptions, ErrorReason
// for memory errors; Agent for all but system shutdown.
type SystemEvent struct {
	Type        SystemEventType
	Agent       uint64 // hsa_agent_t.handle of the faulting GPU
	Address     uint64 // virtual address accessed
	FaultReason FaultReason
	ResetType   ResetType
	ResetCause  ResetCause
	ErrorReason MemoryErrorReason
}

// String reads like ROCr's own message, e.g. "memory fault by agent 0x5589c0
// at address 0x7f0000001000: page not present or supervisor privilege".
func (e SystemEvent) String() string {
	switch e.Type {
	case MemoryFaultEvent:
		// Like ROCr, the imprecise bit qualifies the address, not the reason.
		approx := ""
		if e.FaultReason&FaultImprecise != 0 {
			approx = " (may not be exact address)"
		}
		return fmt.Sprintf("memory fault by agent %#x at address %#x%s: %s",
			e.Agent, e.Address, approx, e.FaultReason&^FaultImprecise)
	case HWExceptionEvent:
		return fmt.Sprintf("hardware exception by agent %#x: %s (reset type %#x)", e.Agent, e.ResetCause, uint32(e.ResetType))
	case MemoryErrorEvent:
		return fmt.Sprintf("memory error by agent %#x at address %#x: %s", e.Agent, e.Address, e.ErrorReason)
	case SystemShutdownEvent:
		return "system shutdown"
	}
	return e.Type.String()
}

// Layout of hsa_amd_event_t on amd64 and arm64 (anchors §2.5): event_type
// u32 at 0, then a union at 8 (8-aligned: every member starts with the u64
// agent handle). The memory-fault part and the size are checked against the
// installed 5.2 header by TestEventLayoutMatchesHeader; the hw_exception and
// memory_error members were checked the same way (clang-19 offsetof, amd64
// and aarch64) against the hsa_ext_amd.h of rocm-systems' release/rocm-rel-7.0.
const (
	eventTypeOff      = 0
	eventAgentOff     = 8  // every union member starts with hsa_agent_t
	eventAddressOff   = 16 // memory_fault.virtual_address, memory_error.virtual_address
	eventReasonOff    = 24 // memory_fault.fault_reason_mask, memory_error.error_reason_mask
	eventResetTypeOff = 16 // hw_exception.reset_type
	eventResetCause   = 20 // hw_exception.reset_cause
	// SystemEventSize is sizeof(hsa_amd_event_t): 4 + 4 padding + a 24-byte
	// union (u64, u64, u32 + 4 padding).
	SystemEventSize = 32
)

// ErrBadSystemEvent is matched (errors.Is) by every decoding failure.
var ErrBadSystemEvent = errors.New("hsa: undecodable system event")

// DecodeError says why event bytes could not be decoded.
type DecodeError struct {
	Type SystemEventType // the type read, when Len >= 4
	Len  int             // bytes available
	Need int             // bytes this type needs (0 for an unknown type)
}

func (e *DecodeError) Error() string {
	if e.Len < 4 {
		return fmt.Sprintf("hsa: system event of %d bytes is too short to hold its type", e.Len)
	}
	if e.Need == 0 {
		return fmt.Sprintf("hsa: unknown system event type %d", uint32(e.Type))
	}
	return fmt.Sprintf("hsa: %s event of %d bytes is too short (needs %d)", e.Type, e.Len, e.Need)
}

// Is makes errors.Is(err, ErrBadSystemEvent) true.
func (e *DecodeError) Is(target error) bool { return target == ErrBadSystemEvent }

// DecodeSystemEvent decodes the bytes of an hsa_amd_event_t (little endian,
// the only byte order ROCm runs on). A short buffer or an unknown type is a
// *DecodeError, never a panic.
func DecodeSystemEvent(b []byte) (SystemEvent, error) {
	if len(b) < 4 {
		return SystemEvent{}, &DecodeError{Len: len(b)}
	}
	le := binary.LittleEndian
	ev := SystemEvent{Type: SystemEventType(le.Uint32(b[eventTypeOff:]))}
	var need int
	switch ev.Type {
	case MemoryFaultEvent, MemoryErrorEvent:
		need = eventReasonOff + 4
	case HWExceptionEvent:
		need = eventResetCause + 4
	case SystemShutdownEvent:
		return ev, nil
	default:
		return SystemEvent{}, &DecodeError{Type: ev.Type, Len: len(b)}
	}
	if len(b) < need {
		return SystemEvent{}, &DecodeError{Type: ev.Type, Len: len(b), Need: need}
	}
	ev.Agent = le.Uint64(b[eventAgentOff:])
	switch ev.Type {
	case MemoryFaultEvent:
		ev.Address = le.Uint64(b[eventAddressOff:])
		ev.FaultReason = FaultReason(le.Uint32(b[eventReasonOff:]))
	case MemoryErrorEvent:
		ev.Address = le.Uint64(b[eventAddressOff:])
		ev.ErrorReason = MemoryErrorReason(le.Uint32(b[eventReasonOff:]))
	case HWExceptionEvent:
		ev.ResetType = ResetType(le.Uint32(b[eventResetTypeOff:]))
		ev.ResetCause = ResetCause(le.Uint32(b[eventResetCause:]))
	}
	return ev, nil
}

type eventAPI struct {
	// typedef hsa_status_t (*hsa_amd_system_event_callback_t)(const hsa_amd_event_t* event, void* data);
	// hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t callback, void* data);
	hsaAmdRegisterSystemEventHandler func(cb uintptr, data uintptr) Status
}

func (a *eventAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hsa_amd_register_system_event_handler"}, Fn: &a.hsaAmdRegisterSystemEventHandler},
	}
}

// The process-wide handler. ROCr cannot unregister a handler (and before
// ROCm 6 accepted only one), so the runtime sees one trampoline, registered
// once; RegisterSystemEventHandler swaps the Go handler behind it.
var systemEvents struct {
	mu         sync.Mutex
	trampoline uintptr
	registered bool
	handler    atomic.Pointer[func(SystemEvent) bool]
}

// onSystemEvent is the hsa_amd_system_event_callback_t. It runs on ROCr's
// async-event thread, which is foreign to Go, while a GPU fault is being
// handled: it decodes, hands the event over, and answers.
func onSystemEvent(event unsafe.Pointer, _ uintptr) uintptr {
	if event == nil {
		return uintptr(ErrGeneric)
	}
	ev, err := DecodeSystemEvent(unsafe.Slice((*byte)(event), SystemEventSize))
	if err != nil {
		return uintptr(ErrGeneric)
	}
	h := systemEvents.handler.Load()
	if h == nil || !(*h)(ev) {
		return uintptr(ErrGeneric)
	}
	return uintptr(Success)
}

// RegisterSystemEventHandler installs h as the process's handler for HSA
// system events (hsa_amd_register_system_event_handler): GPU memory faults,
// hardware exceptions (ROCm ≥ 6.0) and memory errors (ROCm ≥ 6.3).
//
// h returns true when it delivered the event somewhere a waiter will read
// it; the runtime is then told HSA_STATUS_SUCCESS, which suppresses ROCr's
// default of printing "Memory access fault by GPU node-N ..." and calling
// abort(). It returns false for events it does not own (another process's
// agent, a type it does not handle), and the runtime then keeps its default.
// h runs on ROCr's event thread during fault handling: it must not block or
// call into HIP/HSA.
//
// The C callback is registered once per process; later calls replace h
// without registering again. The runtime must be initialised (Init, or
// HIP's own), otherwise the registration fails with
// HSA_STATUS_ERROR_NOT_INITIALIZED and a later call retries it.
func RegisterSystemEventHandler(h func(ev SystemEvent) bool) error {
	if h == nil {
		return errors.New("hsa: RegisterSystemEventHandler: nil handler")
	}
	a, err := get()
	if err != nil {
		return err
	}
	systemEvents.mu.Lock()
	defer systemEvents.mu.Unlock()
	systemEvents.handler.Store(&h)
	if systemEvents.registered {
		return nil
	}
	if systemEvents.trampoline == 0 {
		systemEvents.trampoline = purego.NewCallback(onSystemEvent)
	}
	if err := check("hsa_amd_register_system_event_handler", a.hsaAmdRegisterSystemEventHandler(systemEvents.trampoline, 0)); err != nil {
		systemEvents.handler.Store(nil)
		return err
	}
	systemEvents.registered = true
	return nil
}

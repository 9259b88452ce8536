package hsa

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// eventBytes builds an hsa_amd_event_t image the way the C struct lays it
// out (anchors §2.5): type u32 at 0; union at 8 with the agent u64 at 8,
// then u64 at 16 and u32 at 24 (memory fault/error) or u32 at 16 and 20
// (hardware exception). Filler bytes are set to 0xEE so a decoder that reads
// the wrong offset gets visibly wrong values.
func eventBytes(typ uint32, agent, addr uint64, word24 uint32, word16, word20 uint32) []byte {
	b := make([]byte, SystemEventSize)
	for i := range b {
		b[i] = 0xEE
	}
	le := binary.LittleEndian
	le.PutUint32(b[0:], typ)
	le.PutUint64(b[8:], agent)
	switch typ {
	case 0, 2:
		le.PutUint64(b[16:], addr)
		le.PutUint32(b[24:], word24)
	case 1:
		le.PutUint32(b[16:], word16)
		le.PutUint32(b[20:], word20)
	}
	return b
}

// TestDecodeMemoryFaultEveryReason proves each reason bit decodes to its
// flag and reads like ROCr's message, and that the agent and address come
// from their offsets.
func TestDecodeMemoryFaultEveryReason(t *testing.T) {
	const agent, addr = 0x5589c0a0, 0x7f0012345000
	for _, c := range []struct {
		bit  FaultReason
		mask uint32
		text string
	}{
		{FaultPageNotPresent, 1, "page not present or supervisor privilege"},
		{FaultReadOnly, 2, "write access to a read-only page"},
		{FaultNX, 4, "execute access to a page marked NX"},
		{FaultHostOnly, 8, "host access only"},
		{FaultDRAMECC, 16, "DRAM ECC failure"},
		{FaultSRAMECC, 64, "SRAM ECC failure"},
		{FaultHang, 1 << 31, "generic hang recovery"},
	} {
		ev, err := DecodeSystemEvent(eventBytes(0, agent, addr, c.mask, 0, 0))
		require.NoError(t, err)
		require.Equal(t, SystemEvent{Type: MemoryFaultEvent, Agent: agent, Address: addr, FaultReason: c.bit}, ev)
		require.Equal(t, "memory fault by agent 0x5589c0a0 at address 0x7f0012345000: "+c.text, ev.String())
	}
	// The imprecise bit qualifies the address, as in ROCr's message.
	ev, err := DecodeSystemEvent(eventBytes(0, agent, addr, 1|32, 0, 0))
	require.NoError(t, err)
	require.Equal(t, FaultPageNotPresent|FaultImprecise, ev.FaultReason)
	require.Equal(t, "memory fault by agent 0x5589c0a0 at address 0x7f0012345000 (may not be exact address): page not present or supervisor privilege", ev.String())
	// Several reasons, an unknown bit, and none at all.
	ev, err = DecodeSystemEvent(eventBytes(0, agent, addr, 2|4|0x100, 0, 0))
	require.NoError(t, err)
	require.Equal(t, "memory fault by agent 0x5589c0a0 at address 0x7f0012345000: write access to a read-only page, execute access to a page marked NX, unknown reason bits 0x100", ev.String())
	ev, err = DecodeSystemEvent(eventBytes(0, agent, addr, 0, 0, 0))
	require.NoError(t, err)
	require.Equal(t, "memory fault by agent 0x5589c0a0 at address 0x7f0012345000: unknown reason", ev.String())
}

// TestDecodeOtherEventTypes proves hardware exceptions, memory errors and
// system shutdown decode from their own offsets.
func TestDecodeOtherEventTypes(t *testing.T) {
	ev, err := DecodeSystemEvent(eventBytes(1, 0xabc, 0, 0, uint32(ResetOther), uint32(CauseGPUHang)))
	require.NoError(t, err)
	require.Equal(t, SystemEvent{Type: HWExceptionEvent, Agent: 0xabc, ResetType: ResetOther, ResetCause: CauseGPUHang}, ev)
	require.Equal(t, "hardware exception by agent 0xabc: GPU hang (reset type 0x1)", ev.String())

	ev, err = DecodeSystemEvent(eventBytes(1, 0xabc, 0, 0, 0, uint32(CauseECC)))
	require.NoError(t, err)
	require.Equal(t, CauseECC, ev.ResetCause)
	require.Equal(t, "hardware exception by agent 0xabc: ECC error (reset type 0x0)", ev.String())

	ev, err = DecodeSystemEvent(eventBytes(2, 0xdef, 0x1000, uint32(MemoryInUse), 0, 0))
	require.NoError(t, err)
	require.Equal(t, SystemEvent{Type: MemoryErrorEvent, Agent: 0xdef, Address: 0x1000, ErrorReason: MemoryInUse}, ev)
	require.Equal(t, "memory error by agent 0xdef at address 0x1000: memory in use by a hardware component and cannot be released", ev.String())

	ev, err = DecodeSystemEvent([]byte{3, 0, 0, 0})
	require.NoError(t, err)
	require.Equal(t, SystemEvent{Type: SystemShutdownEvent}, ev)
	require.Equal(t, "system shutdown", ev.String())
}

// TestDecodeRejects proves unknown types and every too-short length are
// *DecodeErrors, never panics.
func TestDecodeRejects(t *testing.T) {
	for _, typ := range []uint32{4, 99, 1 << 31, 0xffffffff} {
		_, err := DecodeSystemEvent(eventBytes(typ, 1, 2, 3, 4, 5))
		require.ErrorIs(t, err, ErrBadSystemEvent)
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		require.Equal(t, SystemEventType(typ), de.Type)
		require.Contains(t, err.Error(), "unknown system event type")
	}
	need := map[uint32]int{0: 28, 1: 24, 2: 28, 3: 4}
	for typ, n := range need {
		full := eventBytes(typ, 1, 2, 3, 4, 5)
		for l := 0; l < n; l++ {
			_, err := DecodeSystemEvent(full[:l])
			require.ErrorIs(t, err, ErrBadSystemEvent, "type %d, %d bytes", typ, l)
		}
		_, err := DecodeSystemEvent(full[:n])
		require.NoError(t, err, "type %d, %d bytes", typ, n)
	}
	_, err := DecodeSystemEvent(nil)
	require.EqualError(t, err, "hsa: system event of 0 bytes is too short to hold its type")
	_, err = DecodeSystemEvent(eventBytes(0, 0, 0, 0, 0, 0)[:20])
	require.EqualError(t, err, "hsa: memory fault event of 20 bytes is too short (needs 28)")
}

// TestEventLayoutMatchesHeader proves the memory-fault offsets and the
// struct size against the installed ROCm 5.2 header with a C compiler.
// (HW_EXCEPTION and MEMORY_ERROR are not in that header; their offsets
// follow from the same union rules and were checked by hand against
// ROCR-Runtime's later headers.)
func TestEventLayoutMatchesHeader(t *testing.T) {
	clang := testenv.LookPath(t, "clang-19")
	if _, err := os.Stat("/usr/include/hsa/hsa_ext_amd.h"); err != nil {
		testenv.NeedHost(t, err)
	}
	src := filepath.Join(t.TempDir(), "layout.c")
	require.NoError(t, os.WriteFile(src, []byte(`#include <stddef.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
_Static_assert(offsetof(hsa_amd_event_t, event_type) == 0, "type");
_Static_assert(offsetof(hsa_amd_event_t, memory_fault.agent) == 8, "agent");
_Static_assert(offsetof(hsa_amd_event_t, memory_fault.virtual_address) == 16, "address");
_Static_assert(offsetof(hsa_amd_event_t, memory_fault.fault_reason_mask) == 24, "reason");
_Static_assert(sizeof(hsa_amd_event_t) == 32, "size");
_Static_assert(sizeof(hsa_agent_t) == 8, "agent size");
`), 0o644))
	out, err := exec.Command(clang, "-x", "c", "-std=c11", "-fsyntax-only", src).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// TestSystemEventTrampoline proves the C callback the runtime calls answers
// HSA_STATUS_SUCCESS only when the Go handler delivered the event, and
// HSA_STATUS_ERROR for a refused, undecodable or null event, when called
// through its C address with a C-layout event.
func TestSystemEventTrampoline(t *testing.T) {
	needLibrary(t)
	// Without an initialised runtime the registration itself fails, is
	// reported, and leaves no handler behind; the trampoline exists.
	err := RegisterSystemEventHandler(func(SystemEvent) bool { return true })
	if err == nil {
		t.Skip("registration succeeded: an HSA runtime is up, so the handler cannot be swapped safely here")
	}
	require.ErrorIs(t, err, ErrNotInitialized)
	require.Nil(t, systemEvents.handler.Load())
	require.NotZero(t, systemEvents.trampoline)
	require.Error(t, RegisterSystemEventHandler(nil))

	var got []SystemEvent
	claim := true
	h := func(ev SystemEvent) bool { got = append(got, ev); return claim }
	systemEvents.handler.Store(&h)
	defer systemEvents.handler.Store(nil)

	call := func(b []byte) Status {
		var buf [SystemEventSize]byte
		copy(buf[:], b)
		r, _, _ := purego.SyscallN(systemEvents.trampoline, uintptr(unsafe.Pointer(&buf[0])), 0)
		return Status(uint32(r))
	}
	fault := eventBytes(0, 0x10, 0xdead000, uint32(FaultReadOnly), 0, 0)
	require.Equal(t, Success, call(fault))
	require.Equal(t, []SystemEvent{{Type: MemoryFaultEvent, Agent: 0x10, Address: 0xdead000, FaultReason: FaultReadOnly}}, got)
	claim = false
	require.Equal(t, ErrGeneric, call(fault))
	require.Len(t, got, 2)
	require.Equal(t, ErrGeneric, call(eventBytes(42, 0, 0, 0, 0, 0)))
	require.Len(t, got, 2, "an undecodable event must not reach the handler")
	r, _, _ := purego.SyscallN(systemEvents.trampoline, 0, 0)
	require.Equal(t, ErrGeneric, Status(uint32(r)))
}

// FuzzDecodeSystemEvent proves arbitrary bytes never panic the decoder and
// that whatever it accepts re-encodes to the bytes it read.
func FuzzDecodeSystemEvent(f *testing.F) {
	f.Add(eventBytes(0, 0x5589c0a0, 0x7f0012345000, 1, 0, 0))
	f.Add(eventBytes(1, 1, 0, 0, 1, 2))
	f.Add(eventBytes(2, 1, 2, 1, 0, 0))
	f.Add([]byte{3, 0, 0, 0})
	f.Add([]byte{0, 0, 0})
	f.Add(eventBytes(7, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := DecodeSystemEvent(b)
		if err != nil {
			return
		}
		_ = ev.String()
		le := binary.LittleEndian
		if uint32(ev.Type) != le.Uint32(b) {
			t.Fatalf("type %d from %x", ev.Type, b[:4])
		}
		if ev.Type != SystemShutdownEvent && ev.Agent != le.Uint64(b[8:]) {
			t.Fatalf("agent %#x from %x", ev.Agent, b[8:16])
		}
	})
}

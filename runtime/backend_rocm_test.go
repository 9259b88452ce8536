package runtime

// The ROCm adapter against Debian's real ROCm 5.2 libraries, on a machine
// without an AMD GPU: the no-device path, error classification and the HSA
// system-event routing. Nothing here runs AMD hardware.

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/hip"
	"github.com/hipgo/hipgo/hsa"
	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/runtime/driver"
)

func TestROCmWithoutAGPUReportsNoDeviceQuickly(t *testing.T) {
	if err := hip.Load(); errors.Is(err, dynlib.ErrNotFound) {
		testenv.NeedHost(t, err)
	}
	if _, err := hip.GetDeviceCount(); err == nil {
		t.Skip("an AMD GPU is present; this test is for machines without one")
	}
	start := time.Now()
	n, err := rocmDriver{}.DeviceCount()
	took := time.Since(start)
	require.Zero(t, n)
	var nd *NoDeviceError
	require.ErrorAs(t, err, &nd)
	require.ErrorIs(t, err, ErrNoDevice)
	var he *hip.Error
	require.ErrorAs(t, err, &he, "the HIP error with its code is kept")
	require.Equal(t, "hipInit", he.Call)
	require.Less(t, took, time.Second)
	t.Logf("ROCm 5.2 (%s) without a GPU: %v in %v", hip.LibraryPath(), err, took)
}

func TestROCmClassifiesHIPErrors(t *testing.T) {
	d := &rocmDevice{}
	for _, tc := range []struct {
		err  error
		want driver.Class
	}{
		{&hip.Error{Call: "hipEventQuery", Code: hip.ErrIllegalAddress}, driver.Fault},
		{&hip.Error{Call: "hipStreamQuery", Code: hip.ErrLaunchFailure}, driver.Fault},
		// 719 from the launch is either CLR's launch-bounds rejection or the
		// sticky error of an earlier hardware exception (HIP_INIT_API returns
		// it from every call): Fault, so that the runtime probes the device
		// (Alive) before it decides.
		{&hip.Error{Call: "hipModuleLaunchKernel", Code: hip.ErrLaunchFailure}, driver.Fault},
		{&hip.Error{Call: "hipMalloc", Code: hip.ErrOutOfMemory}, driver.OutOfMemory},
		{&hip.Error{Call: "hipModuleGetFunction", Code: hip.ErrNotFound}, driver.NotFound},
		{&hip.Error{Call: "hipModuleLoadData", Code: hip.ErrNoBinaryForGpu}, driver.NotFound},
		{&hip.Error{Call: "hipModuleLaunchKernel", Code: hip.ErrInvalidValue}, driver.Rejected},
		{errors.New("something else"), driver.Other},
	} {
		require.Equal(t, tc.want, d.Classify(tc.err), "%v", tc.err)
	}
}

func TestHSASystemEventsReachTheDeviceOfTheirAgent(t *testing.T) {
	r := &faultRouter{devs: map[*rocmDevice]struct{}{}, registered: true}
	var got []driver.AsyncFault
	a := &rocmDevice{agent: 0x1000, agentKnown: true}
	a.OnFault(func(f driver.AsyncFault) bool { got = append(got, f); return true })
	b := &rocmDevice{agent: 0x2000, agentKnown: true}
	b.OnFault(func(driver.AsyncFault) bool { t.Fatal("fault routed to the wrong device"); return false })
	r.devs[a], r.devs[b] = struct{}{}, struct{}{}

	ev := hsa.SystemEvent{Type: hsa.MemoryFaultEvent, Agent: 0x1000, Address: 0x7f0000001000, FaultReason: hsa.FaultPageNotPresent}
	require.True(t, r.handle(ev), "a delivered fault is claimed, which stops ROCr from aborting")
	require.Len(t, got, 1)
	require.Equal(t, "memory fault", got[0].Kind)
	require.EqualValues(t, 0x7f0000001000, got[0].Address)
	require.Contains(t, got[0].Reason, "page not present")
	var se systemEventError
	require.ErrorAs(t, got[0].Err, &se)
	require.Equal(t, ev, se.Event)

	require.False(t, r.handle(hsa.SystemEvent{Type: hsa.MemoryFaultEvent, Agent: 0x3000}), "an agent hipgo did not open is left to ROCr")
	require.False(t, r.handle(hsa.SystemEvent{Type: hsa.MemoryErrorEvent, Agent: 0x1000}), "memory errors are raised inside a free, not claimed")
	require.True(t, r.handle(hsa.SystemEvent{Type: hsa.HWExceptionEvent, Agent: 0x1000, ResetCause: hsa.CauseGPUHang}))
	require.Equal(t, "hardware exception", got[1].Kind)

	// One open device whose agent could not be mapped takes the fault.
	lone := &faultRouter{devs: map[*rocmDevice]struct{}{}, registered: true}
	c := &rocmDevice{}
	delivered := false
	c.OnFault(func(driver.AsyncFault) bool { delivered = true; return true })
	lone.devs[c] = struct{}{}
	require.True(t, lone.handle(hsa.SystemEvent{Type: hsa.MemoryFaultEvent, Agent: 0x9999}))
	require.True(t, delivered)
}

func TestSurveyIncludesROCmWithItsReason(t *testing.T) {
	if err := hip.Load(); errors.Is(err, dynlib.ErrNotFound) {
		testenv.NeedHost(t, err)
	}
	reps := Survey(t.Context())
	require.Equal(t, driver.ROCm, reps[0].Backend)
	require.Equal(t, driver.CUDA, reps[1].Backend)
	require.Equal(t, driver.Metal, reps[2].Backend)
	for _, r := range reps {
		t.Logf("%s: devices %d, %v", r.Backend, len(r.Devices), r.Err)
	}
}

// TestHSAAgentsAreMatchedByPCIAddressNotPosition synthesizes the agent lists
// HSA reports and the identities HIP reports for them, including
// HIP_VISIBLE_DEVICES=1 on a two-GPU host (HIP device 0 is the second GPU
// agent), partitions that share a PCI address, and runtimes that lack an
// attribute.
func TestHSAAgentsAreMatchedByPCIAddressNotPosition(t *testing.T) {
	gpuA := agentIdentity{handle: 0xa000, pci: pciLocation{0, 0x03, 0}, pciKnown: true, uuid: "GPU-0123456789abcdef"}
	gpuB := agentIdentity{handle: 0xb000, pci: pciLocation{0, 0xc1, 0}, pciKnown: true, uuid: "GPU-fedcba9876543210"}
	uuid := func(s string) (u [16]byte) { copy(u[:], s); return u }
	hipOf := func(a agentIdentity) deviceIdentity {
		return deviceIdentity{pci: a.pci, pciKnown: true, uuid: uuid(a.uuid[4:]), uuidKnown: true}
	}
	part0 := agentIdentity{handle: 0x1000, pci: pciLocation{0, 0x41, 0}, pciKnown: true, uuid: "GPU-1111111111111111"}
	part1 := agentIdentity{handle: 0x2000, pci: pciLocation{0, 0x41, 0}, pciKnown: true, uuid: "GPU-2222222222222222"}
	noPCI := func(a agentIdentity) agentIdentity { a.pciKnown = false; return a }
	for _, tc := range []struct {
		name   string
		dev    deviceIdentity
		agents []agentIdentity
		want   uint64
		mapped bool
	}{
		{"all devices visible", hipOf(gpuA), []agentIdentity{gpuA, gpuB}, gpuA.handle, true},
		// HIP_VISIBLE_DEVICES=1: HIP lists only the second GPU, as device 0;
		// HSA still lists both. Position would pick gpuA.
		{"HIP_VISIBLE_DEVICES renumbers", hipOf(gpuB), []agentIdentity{gpuA, gpuB}, gpuB.handle, true},
		{"CUDA_VISIBLE_DEVICES=1,0 reorders", hipOf(gpuA), []agentIdentity{gpuB, gpuA}, gpuA.handle, true},
		{"PCI alone decides", deviceIdentity{pci: gpuB.pci, pciKnown: true}, []agentIdentity{gpuA, gpuB}, gpuB.handle, true},
		{"partitions at one address: the UUID breaks the tie", hipOf(part1), []agentIdentity{gpuA, part0, part1}, part1.handle, true},
		{"ROCr without the PCI attributes: the UUID stands in", hipOf(gpuB), []agentIdentity{noPCI(gpuA), noPCI(gpuB)}, gpuB.handle, true},
		{"partitions without unique ids stay unmapped",
			deviceIdentity{pci: part0.pci, pciKnown: true, uuid: uuid("XX"), uuidKnown: true},
			[]agentIdentity{{handle: 1, pci: part0.pci, pciKnown: true, uuid: "GPU-XX"}, {handle: 2, pci: part0.pci, pciKnown: true, uuid: "GPU-XX"}}, 0, false},
		{"a device HSA does not list stays unmapped", deviceIdentity{pci: pciLocation{1, 2, 3}, pciKnown: true}, []agentIdentity{gpuA, gpuB}, 0, false},
		{"no identity at all stays unmapped", deviceIdentity{}, []agentIdentity{gpuA}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, mapped := matchAgent(tc.dev, tc.agents)
			require.Equal(t, tc.mapped, mapped)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestHSAFaultsReachEveryHandleOfTheirGPU: two handles on one GPU (mapped, or
// both unmapped) both lose it; unmapped handles on two GPUs take nothing.
func TestHSAFaultsReachEveryHandleOfTheirGPU(t *testing.T) {
	ev := hsa.SystemEvent{Type: hsa.MemoryFaultEvent, Agent: 0x1000, Address: 0x1000, FaultReason: hsa.FaultPageNotPresent}
	for _, tc := range []struct {
		name    string
		devs    []*rocmDevice
		claimed bool
		reached int
	}{
		{"two handles, mapped", []*rocmDevice{{ordinal: 0, agent: 0x1000, agentKnown: true}, {ordinal: 0, agent: 0x1000, agentKnown: true}}, true, 2},
		{"two handles, unmapped", []*rocmDevice{{ordinal: 0}, {ordinal: 0}}, true, 2},
		{"two GPUs, unmapped", []*rocmDevice{{ordinal: 0}, {ordinal: 1}}, false, 0},
		{"the mapped GPU of two", []*rocmDevice{{ordinal: 0, agent: 0x1000, agentKnown: true}, {ordinal: 1}}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &faultRouter{devs: map[*rocmDevice]struct{}{}, registered: true}
			reached := 0
			for _, d := range tc.devs {
				d.OnFault(func(driver.AsyncFault) bool { reached++; return true })
				r.devs[d] = struct{}{}
			}
			require.Equal(t, tc.claimed, r.handle(ev))
			require.Equal(t, tc.reached, reached)
		})
	}
}

// TestHSAFaultsAfterCloseOfAFaultedDeviceAreClaimed: the device saw the
// fault first through a HIP call (Classify said Fault) and was closed before
// ROCr's event thread delivered the same fault. The event is still claimed:
// it was reported, and not claiming it makes ROCr abort the process (CLR up
// to 6.2). A device closed without a fault leaves a later event to ROCr.
func TestHSAFaultsAfterCloseOfAFaultedDeviceAreClaimed(t *testing.T) {
	ev := hsa.SystemEvent{Type: hsa.MemoryFaultEvent, Agent: 0x1000}
	for _, tc := range []struct {
		name    string
		dev     *rocmDevice
		faulted bool
		claimed bool
	}{
		{"mapped, faulted", &rocmDevice{agent: 0x1000, agentKnown: true}, true, true},
		{"unmapped, faulted", &rocmDevice{}, true, true},
		{"mapped, closed clean", &rocmDevice{agent: 0x1000, agentKnown: true}, false, false},
		{"another agent, faulted", &rocmDevice{agent: 0x2000, agentKnown: true}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &faultRouter{devs: map[*rocmDevice]struct{}{}, registered: true}
			d := tc.dev
			d.OnFault(func(driver.AsyncFault) bool { t.Fatal("delivered to a closed device"); return false })
			r.devs[d] = struct{}{}
			if tc.faulted {
				require.Equal(t, driver.Fault, d.Classify(&hip.Error{Call: "hipEventQuery", Code: hip.ErrIllegalAddress}))
			}
			r.remove(d)
			require.Equal(t, tc.claimed, r.handle(ev))
		})
	}
}

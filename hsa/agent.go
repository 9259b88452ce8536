package hsa

import (
	"bytes"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// Attribute ids for hsa_agent_get_info, from the ROCm 5.2 headers
// (TestAgentInfoIDsMatchHeader checks them against the installed ones).
const (
	agentInfoName            = 0      // HSA_AGENT_INFO_NAME, char[64]
	agentInfoWavefrontSize   = 6      // HSA_AGENT_INFO_WAVEFRONT_SIZE, uint32_t
	agentInfoDevice          = 17     // HSA_AGENT_INFO_DEVICE, hsa_device_type_t
	amdAgentInfoComputeUnits = 0xA002 // HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, uint32_t
	amdAgentInfoBDFID        = 0xA006 // HSA_AMD_AGENT_INFO_BDFID, uint32_t: bus<<8 | device<<3 | function
	amdAgentInfoDomain       = 0xA00F // HSA_AMD_AGENT_INFO_DOMAIN, uint32_t: the PCI domain
	amdAgentInfoUUID         = 0xA011 // HSA_AMD_AGENT_INFO_UUID, char[21]: "GPU-" and 16 hex digits
	agentNameSize            = 64
	agentUUIDSize            = 21
)

// DeviceType is an hsa_device_type_t.
type DeviceType uint32

const (
	DeviceCPU DeviceType = 0 // HSA_DEVICE_TYPE_CPU
	DeviceGPU DeviceType = 1 // HSA_DEVICE_TYPE_GPU
	DeviceDSP DeviceType = 2 // HSA_DEVICE_TYPE_DSP
)

func (t DeviceType) String() string {
	switch t {
	case DeviceCPU:
		return "CPU"
	case DeviceGPU:
		return "GPU"
	case DeviceDSP:
		return "DSP"
	}
	return fmt.Sprintf("DeviceType(%d)", uint32(t))
}

// Agent is an HSA agent with the attributes hipgo reads, queried once when
// Agents lists it.
type Agent struct {
	handle        uint64
	name          string
	deviceType    DeviceType
	wavefrontSize uint32
	computeUnits  uint32
	pci           PCIAddress
	pciKnown      bool
	uuid          string
}

// PCIAddress is a GPU agent's PCI location, from HSA_AMD_AGENT_INFO_DOMAIN
// and HSA_AMD_AGENT_INFO_BDFID.
type PCIAddress struct {
	Domain   uint32
	Bus      uint8
	Device   uint8
	Function uint8
}

// String returns "0000:c1:00.0".
func (p PCIAddress) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", p.Domain, p.Bus, p.Device, p.Function)
}

// pciFromBDFID splits HSA_AMD_AGENT_INFO_BDFID the way CLR does
// (roc::Device::create, rocclr/device/rocm/rocdevice.cpp).
func pciFromBDFID(domain, bdfid uint32) PCIAddress {
	return PCIAddress{Domain: domain, Bus: uint8(bdfid >> 8), Device: uint8(bdfid>>3) & 0x1f, Function: uint8(bdfid) & 0x7}
}

// Handle returns the agent's hsa_agent_t handle (what system events carry).
func (a Agent) Handle() uint64 { return a.handle }

// Name returns HSA_AGENT_INFO_NAME: the gfx arch for a GPU ("gfx90a"), the
// CPU's model name for a CPU.
func (a Agent) Name() string { return a.name }

// DeviceType returns CPU, GPU or DSP.
func (a Agent) DeviceType() DeviceType { return a.deviceType }

// WavefrontSize returns HSA_AGENT_INFO_WAVEFRONT_SIZE (64 or 32 on GPUs; 0
// for agents that do not dispatch kernels).
func (a Agent) WavefrontSize() uint32 { return a.wavefrontSize }

// ComputeUnits returns HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT.
func (a Agent) ComputeUnits() uint32 { return a.computeUnits }

// PCI returns a GPU agent's PCI address; false for CPU agents and when the
// runtime does not answer the two attributes.
func (a Agent) PCI() (PCIAddress, bool) { return a.pci, a.pciKnown }

// UUID returns a GPU agent's HSA_AMD_AGENT_INFO_UUID ("GPU-" and 16 hex
// digits; "GPU-XX" for a GPU without a unique id), or "" when not known.
func (a Agent) UUID() string { return a.uuid }

type agentAPI struct {
	// typedef hsa_status_t (*callback)(hsa_agent_t agent, void* data);
	// hsa_status_t hsa_iterate_agents(callback, void* data);
	hsaIterateAgents func(cb uintptr, data uintptr) Status
	// hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute, void* value);
	hsaAgentGetInfo func(agent uint64, attr uint32, value unsafe.Pointer) Status
}

func (a *agentAPI) funcs() []dynlib.Func {
	return []dynlib.Func{
		{Names: []string{"hsa_iterate_agents"}, Fn: &a.hsaIterateAgents},
		{Names: []string{"hsa_agent_get_info"}, Fn: &a.hsaAgentGetInfo},
	}
}

// The iteration callback: one trampoline per process (purego's are never
// freed), routed by an integer handle to the collector of the Agents call in
// progress.
var iteration struct {
	once       sync.Once
	trampoline uintptr
	mu         sync.Mutex
	next       uintptr
	lists      map[uintptr]*[]uint64
}

func iterateTrampoline() uintptr {
	iteration.once.Do(func() {
		iteration.lists = map[uintptr]*[]uint64{}
		iteration.trampoline = purego.NewCallback(collectAgent)
	})
	return iteration.trampoline
}

// collectAgent is the hsa_iterate_agents callback.
func collectAgent(agent uint64, data uintptr) uintptr {
	iteration.mu.Lock()
	defer iteration.mu.Unlock()
	list, ok := iteration.lists[data]
	if !ok {
		return uintptr(ErrInvalidArgument)
	}
	*list = append(*list, agent)
	return uintptr(Success)
}

// Agents lists every agent (CPUs and GPUs) with its attributes. It needs an
// initialised runtime (Init, or HIP's own): otherwise the runtime answers
// HSA_STATUS_ERROR_NOT_INITIALIZED, returned as an *Error.
func Agents() ([]Agent, error) {
	a, err := get()
	if err != nil {
		return nil, err
	}
	cb := iterateTrampoline()
	var handles []uint64
	iteration.mu.Lock()
	iteration.next++
	h := iteration.next
	iteration.lists[h] = &handles
	iteration.mu.Unlock()
	st := a.hsaIterateAgents(cb, h)
	iteration.mu.Lock()
	delete(iteration.lists, h)
	iteration.mu.Unlock()
	if err := check("hsa_iterate_agents", st); err != nil {
		return nil, err
	}
	agents := make([]Agent, 0, len(handles))
	for _, hd := range handles {
		ag, err := a.describe(hd)
		if err != nil {
			return nil, err
		}
		agents = append(agents, ag)
	}
	return agents, nil
}

func (a *api) describe(handle uint64) (Agent, error) {
	ag := Agent{handle: handle}
	var name [agentNameSize]byte
	if err := a.info(handle, agentInfoName, unsafe.Pointer(&name[0])); err != nil {
		return Agent{}, err
	}
	if i := bytes.IndexByte(name[:], 0); i >= 0 {
		ag.name = string(name[:i])
	} else {
		ag.name = string(name[:])
	}
	for _, q := range []struct {
		attr uint32
		dst  *uint32
	}{
		{agentInfoDevice, (*uint32)(&ag.deviceType)},
		{agentInfoWavefrontSize, &ag.wavefrontSize},
		{amdAgentInfoComputeUnits, &ag.computeUnits},
	} {
		if err := a.info(handle, q.attr, unsafe.Pointer(q.dst)); err != nil {
			return Agent{}, err
		}
	}
	if ag.deviceType == DeviceGPU {
		a.identify(&ag)
	}
	return ag, nil
}

// identify reads a GPU agent's PCI address and UUID. ROCr's GpuAgent::GetInfo
// (core/runtime/amd_gpu_agent.cpp) answers all three attributes since ROCm
// 3.5 (the oldest release read): BDFID is KFD's location id, UUID "GPU-" and
// the unique id as 16 zero-padded hex digits, or "GPU-XX" when the GPU or
// the thunk has none. They only serve to match agents with HIP devices, so
// an attribute the runtime refuses leaves that identity unknown instead of
// failing the agent list.
func (a *api) identify(ag *Agent) {
	var domain, bdfid uint32
	if a.info(ag.handle, amdAgentInfoDomain, unsafe.Pointer(&domain)) == nil &&
		a.info(ag.handle, amdAgentInfoBDFID, unsafe.Pointer(&bdfid)) == nil {
		ag.pci, ag.pciKnown = pciFromBDFID(domain, bdfid), true
	}
	var uuid [agentUUIDSize + 11]byte // a runtime that writes a longer string stays inside
	if a.info(ag.handle, amdAgentInfoUUID, unsafe.Pointer(&uuid[0])) == nil {
		if i := bytes.IndexByte(uuid[:], 0); i >= 0 {
			ag.uuid = string(uuid[:i])
		}
	}
}

func (a *api) info(handle uint64, attr uint32, dst unsafe.Pointer) error {
	if err := check("hsa_agent_get_info", a.hsaAgentGetInfo(handle, attr, dst)); err != nil {
		return fmt.Errorf("agent %#x attribute %#x: %w", handle, attr, err)
	}
	return nil
}

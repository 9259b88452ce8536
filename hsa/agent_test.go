package hsa

import (
	"errors"
	"os"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/tools/gencodes/cenum"
	"github.com/stretchr/testify/require"
)

var errNoGPUAgent = errors.New("HSA lists no GPU agent")

// TestAgentInfoIDsMatchHeader proves the attribute ids and device types
// used with hsa_agent_get_info are the installed headers' values.
func TestAgentInfoIDsMatchHeader(t *testing.T) {
	values := map[string]int64{}
	for _, h := range []string{"/usr/include/hsa/hsa.h", "/usr/include/hsa/hsa_ext_amd.h"} {
		src, err := os.ReadFile(h)
		testenv.NeedHost(t, err)
		enums, err := cenum.Parse(src)
		require.NoError(t, err)
		for _, e := range enums {
			for _, c := range e.Constants {
				values[c.Name] = c.Value
			}
		}
	}
	for name, want := range map[string]int64{
		"HSA_AGENT_INFO_NAME":                   agentInfoName,
		"HSA_AGENT_INFO_WAVEFRONT_SIZE":         agentInfoWavefrontSize,
		"HSA_AGENT_INFO_DEVICE":                 agentInfoDevice,
		"HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT": amdAgentInfoComputeUnits,
		"HSA_AMD_AGENT_INFO_BDFID":              amdAgentInfoBDFID,
		"HSA_AMD_AGENT_INFO_DOMAIN":             amdAgentInfoDomain,
		"HSA_AMD_AGENT_INFO_UUID":               amdAgentInfoUUID,
		"HSA_DEVICE_TYPE_CPU":                   int64(DeviceCPU),
		"HSA_DEVICE_TYPE_GPU":                   int64(DeviceGPU),
		"HSA_DEVICE_TYPE_DSP":                   int64(DeviceDSP),
		"HSA_AMD_GPU_MEMORY_FAULT_EVENT":        int64(MemoryFaultEvent),
		"HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT": int64(FaultPageNotPresent),
		"HSA_AMD_MEMORY_FAULT_READ_ONLY":        int64(FaultReadOnly),
		"HSA_AMD_MEMORY_FAULT_NX":               int64(FaultNX),
		"HSA_AMD_MEMORY_FAULT_HOST_ONLY":        int64(FaultHostOnly),
		"HSA_AMD_MEMORY_FAULT_DRAMECC":          int64(FaultDRAMECC),
		"HSA_AMD_MEMORY_FAULT_IMPRECISE":        int64(FaultImprecise),
		"HSA_AMD_MEMORY_FAULT_SRAMECC":          int64(FaultSRAMECC),
		"HSA_AMD_MEMORY_FAULT_HANG":             int64(FaultHang),
	} {
		got, ok := values[name]
		require.True(t, ok, "%s not in the headers", name)
		require.Equal(t, want, got, name)
	}
	// The 5.2 header has no HW_EXCEPTION/MEMORY_ERROR event types: their
	// values come from later headers (see event.go).
	_, ok := values["HSA_AMD_GPU_HW_EXCEPTION_EVENT"]
	require.False(t, ok, "the installed header has HW exceptions: check HWExceptionEvent against it")
	require.Equal(t, "CPU GPU DSP DeviceType(7)", DeviceCPU.String()+" "+DeviceGPU.String()+" "+DeviceDSP.String()+" "+DeviceType(7).String())
}

// TestPCIFromBDFID proves the BDFID split (bus<<8 | device<<3 | function,
// as CLR decodes it) and the printed form, which matches HIP's.
func TestPCIFromBDFID(t *testing.T) {
	p := pciFromBDFID(1, 0xc1<<8|0x1f<<3|5)
	require.Equal(t, PCIAddress{Domain: 1, Bus: 0xc1, Device: 0x1f, Function: 5}, p)
	require.Equal(t, "0001:c1:1f.5", p.String())
	require.Equal(t, "0000:03:00.0", pciFromBDFID(0, 0x0300).String())
}

package hip

import (
	"os"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/tools/gencodes/cenum"
	"github.com/stretchr/testify/require"
)

// TestAttributeIDsMatchHeader proves each Attribute constant has the value
// of its hipDeviceAttribute_t enumerator in the installed header (HIP's ids
// differ from CUDA's, and implicit enum values are easy to miscount).
func TestAttributeIDsMatchHeader(t *testing.T) {
	src, err := os.ReadFile("/usr/include/hip/hip_runtime_api.h")
	testenv.NeedHost(t, err)
	enums, err := cenum.Parse(src)
	require.NoError(t, err)
	e, ok := cenum.Find(enums, "hipDeviceAttribute_t")
	require.True(t, ok)
	header := map[string]int64{}
	for _, c := range e.Constants {
		header[c.Name] = c.Value
	}
	for _, c := range []struct {
		attr  Attribute
		cName string
	}{
		{AttrClockRate, "hipDeviceAttributeClockRate"},
		{AttrIntegrated, "hipDeviceAttributeIntegrated"},
		{AttrL2CacheSize, "hipDeviceAttributeL2CacheSize"},
		{AttrComputeCapabilityMajor, "hipDeviceAttributeComputeCapabilityMajor"},
		{AttrMaxBlockDimX, "hipDeviceAttributeMaxBlockDimX"},
		{AttrMaxBlockDimY, "hipDeviceAttributeMaxBlockDimY"},
		{AttrMaxBlockDimZ, "hipDeviceAttributeMaxBlockDimZ"},
		{AttrMaxGridDimX, "hipDeviceAttributeMaxGridDimX"},
		{AttrMaxGridDimY, "hipDeviceAttributeMaxGridDimY"},
		{AttrMaxGridDimZ, "hipDeviceAttributeMaxGridDimZ"},
		{AttrMaxThreadsPerBlock, "hipDeviceAttributeMaxThreadsPerBlock"},
		{AttrComputeCapabilityMinor, "hipDeviceAttributeComputeCapabilityMinor"},
		{AttrMultiprocessorCount, "hipDeviceAttributeMultiprocessorCount"},
		{AttrMaxSharedMemoryPerBlock, "hipDeviceAttributeMaxSharedMemoryPerBlock"},
		{AttrWarpSize, "hipDeviceAttributeWarpSize"},
		{AttrMaxSharedMemoryPerMultiprocessor, "hipDeviceAttributeMaxSharedMemoryPerMultiprocessor"},
		{AttrAsicRevision, "hipDeviceAttributeAsicRevision"},
	} {
		v, ok := header[c.cName]
		require.True(t, ok, "%s not in the header", c.cName)
		require.Equal(t, v, int64(c.attr), c.cName)
	}
	// The ids the design names, spelled out once more.
	require.Equal(t, []Attribute{56, 63, 87, 23, 61},
		[]Attribute{AttrMaxThreadsPerBlock, AttrMultiprocessorCount, AttrWarpSize, AttrComputeCapabilityMajor, AttrComputeCapabilityMinor})
}

package cpuid

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFeaturesMatchTheKernel proves the features agree with what Linux
// reports in /proc/cpuinfo (its flags avx2, fma, f16c and the vendor), where
// that file exists.
func TestFeaturesMatchTheKernel(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || runtime.GOARCH != "amd64" {
		t.Skip("needs Linux on amd64 to compare with /proc/cpuinfo")
	}
	info := string(b)
	var flags map[string]bool
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = map[string]bool{}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	require.NotNil(t, flags)
	require.Equal(t, flags["avx2"] && flags["fma"], AVX2FMA())
	require.Equal(t, flags["avx2"] && flags["fma"] && flags["f16c"], F16C())
	require.Equal(t, strings.Contains(info, "GenuineIntel"), Intel())
}

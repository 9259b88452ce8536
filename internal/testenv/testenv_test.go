package testenv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The child tests run only when re-executed by TestSkipOrFail with
// HIPGO_TESTENV_CHILD set; alone they return at once.
func TestChildNeedGPU(t *testing.T) {
	if os.Getenv("HIPGO_TESTENV_CHILD") != "gpu" {
		return
	}
	NeedGPU(t, errors.New("no GPU in this child"))
	t.Log("NOT REACHED")
}

func TestChildNeedHost(t *testing.T) {
	if os.Getenv("HIPGO_TESTENV_CHILD") != "host" {
		return
	}
	NeedHost(t, errors.New("clang-19 missing in this child"))
	t.Log("NOT REACHED")
}

func TestChildCacheFile(t *testing.T) {
	if os.Getenv("HIPGO_TESTENV_CHILD") != "cache" {
		return
	}
	CacheFile(t, "HIPGO_TESTENV_CACHE_FILE", "no/such/file.gguf")
	t.Log("NOT REACHED")
}

// TestSkipOrFail proves the rule every GPU and host-package test relies on:
// skip when the thing is missing, but fail when the run requires it.
func TestSkipOrFail(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct {
		child, test string
		env         []string
		wantFail    bool
		wantText    string
	}{
		{"gpu", "TestChildNeedGPU", nil, false, "SKIP"},
		{"gpu", "TestChildNeedGPU", []string{"HIPGO_REQUIRE_GPU=1"}, true, "HIPGO_REQUIRE_GPU=1 but the GPU is unusable"},
		{"host", "TestChildNeedHost", nil, false, "SKIP"},
		{"host", "TestChildNeedHost", []string{"CI=true"}, true, "CI must have this"},
		{"host", "TestChildNeedHost", []string{"HIPGO_REQUIRE_HOST_TOOLS=1"}, true, "CI must have this"},
		{"cache", "TestChildCacheFile", nil, false, "SKIP"},
		{"cache", "TestChildCacheFile", []string{"CI=true"}, true, "CI must have this"},
		{"cache", "TestChildCacheFile", []string{"HIPGO_TESTENV_CACHE_FILE=/nonexistent/x.gguf"}, true, "/nonexistent/x.gguf (scripts/deps.sh fetches it"},
	} {
		cmd := exec.Command(exe, "-test.run=^"+tc.test+"$", "-test.v")
		cmd.Env = append(cleanEnv(), append(tc.env, "HIPGO_TESTENV_CHILD="+tc.child)...)
		out, err := cmd.CombinedOutput()
		if tc.wantFail {
			require.Error(t, err, "%s %v must fail:\n%s", tc.test, tc.env, out)
		} else {
			require.NoError(t, err, "%s %v must skip:\n%s", tc.test, tc.env, out)
		}
		require.Contains(t, string(out), tc.wantText)
		require.NotContains(t, string(out), "NOT REACHED")
	}
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HIPGO_REQUIRE_") || strings.HasPrefix(kv, "CI=") || strings.HasPrefix(kv, "HIPGO_TESTENV_CACHE_FILE=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

package sampling

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// Set in the child process by TestKillSwitches: which variable it sets and
// whether routing must be off.
const (
	childEnv  = "HIPGO_SAMPLING_KILLSWITCH_CHILD"
	childWant = "HIPGO_SAMPLING_KILLSWITCH_WANT"
)

// Each kill switch, set to 0, false, off, no or OFF, turns its routing off
// (and only its own), and any other value ("on") leaves it on. The variables
// are read once per process, so each value runs in a child process: the
// test binary re-executed on TestKillSwitchChild with the variable set.
func TestKillSwitches(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("running as a child")
	}
	for _, env := range []string{EnvGumbel, EnvRejection} {
		for _, v := range []string{"0", "false", "off", "no", "OFF", "on"} {
			t.Run(env+"="+v, func(t *testing.T) {
				t.Parallel()
				want := "off"
				if v == "on" {
					want = "on"
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestKillSwitchChild$", "-test.v", "-test.count=1")
				cmd.Env = append(os.Environ(), childEnv+"="+env, childWant+"="+want, env+"="+v)
				out, err := cmd.CombinedOutput()
				require.NoErrorf(t, err, "%s", out)
				require.Containsf(t, string(out), "--- PASS: TestKillSwitchChild", "%s", out)
			})
		}
	}
}

// TestKillSwitchChild runs only inside TestKillSwitches' child processes.
func TestKillSwitchChild(t *testing.T) {
	env := os.Getenv(childEnv)
	if env == "" {
		t.Skip("only runs as a child of TestKillSwitches")
	}
	off := os.Getenv(childWant) == "off"
	gumbelOff := off && env == EnvGumbel
	rejectionOff := off && env == EnvRejection
	require.Equal(t, !gumbelOff, GumbelRouting())
	require.Equal(t, !rejectionOff, RejectionRouting())

	// Read once: changing the variable now has no effect.
	require.NoError(t, os.Setenv(env, "on"))
	require.Equal(t, !gumbelOff, GumbelRouting())
	require.Equal(t, !rejectionOff, RejectionRouting())

	r := NewRouter(BackendCUDA, DefaultPolicy(BackendCUDA))
	var logs bytes.Buffer
	r.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	d, err := r.Decide([]Params{DefaultParams()}, 1, 100)
	require.NoError(t, err)
	if gumbelOff {
		require.Equal(t, Decision{RouteCategorical, ReasonGumbelKillSwitch}, d)
		require.Contains(t, logs.String(), EnvGumbel)
	} else {
		require.Equal(t, Decision{RouteGumbel, ReasonGumbelKernel}, d)
	}
	d, err = r.Decide([]Params{withP(1, 0, 0.9, 0)}, 1, 100)
	require.NoError(t, err)
	if rejectionOff {
		require.Equal(t, Decision{RouteArgpartition, ReasonRejectionKillSwitch}, d)
		require.Contains(t, logs.String(), EnvRejection)
	} else {
		require.Equal(t, Decision{RouteRejection, ReasonRejectionKernel}, d)
	}
	// The switch gates routing, not the samplers: they stay callable.
	tok := make([]uint32, 1)
	require.NoError(t, GumbelMaxCPU(tok, []float32{0, 5}, 1, 2, 0, Key{}))
	require.Equal(t, uint32(1), tok[0])
}

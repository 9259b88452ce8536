package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
)

// TestNoEventStaysPendingAfterItSettles records many events with the monitor
// running (nobody waits on most of them) and requires the pending set to
// empty once the stream is idle. An event the monitor settled before it was
// tracked would stay in the set for ever and keep the monitor polling (seen
// on the H200 before Record tracked events ahead of listing them).
func TestNoEventStaysPendingAfterItSettles(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(map[bool]string{false: "with callbacks", true: "monitor only"}[drop], func(t *testing.T) {
			noEventStaysPending(t, drop)
		})
	}
}

// noEventStaysPending: with callbacks dropped, only the monitor settles
// events, so an event it never looks at (its stream retired while the event
// was being recorded) hangs the Synchronize: the deadline catches it.
func noEventStaysPending(t *testing.T, dropCallbacks bool) {
	drv := simgpu.New(simgpu.Config{Devices: 1, Kernels: []simgpu.KernelDef{simgpu.Empty}, DropCallbacks: dropCallbacks})
	dev, err := Open(context.Background(), WithDrivers(drv))
	require.NoError(t, err)
	defer dev.Close()
	mod, err := dev.LoadImage([]byte("m"), []KernelSpec{{Name: "empty"}})
	require.NoError(t, err)
	k, err := mod.Kernel("empty")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	one := LaunchConfig{Grid: Dim3{X: 1, Y: 1, Z: 1}, Block: Dim3{X: 1, Y: 1, Z: 1}}
	for round := 0; round < 20; round++ {
		for i := 0; i < 500; i++ {
			require.NoError(t, s.Launch(k, one))
			_, err := s.Record()
			require.NoError(t, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, s.Synchronize(ctx), "round %d", round)
		cancel()
		require.Eventually(t, func() bool { return dev.mon.pendingCount() == 0 }, 2*time.Second, time.Millisecond,
			"round %d: %d events still pending after the stream went idle", round, dev.mon.pendingCount())
	}
}

package runtime_test

// Races between the runtime's own steps and a device that is lost or closed
// in the middle of a driver call, reproduced deterministically by doing the
// losing or closing from inside the simulated driver call (simgpu.Config.OnCall).

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// onceIn returns an OnCall hook that runs fn inside the first call named
// call after arm is set, and a pointer to arm.
func onceIn(call string, fn func()) (func(string) error, *atomic.Bool) {
	var armed atomic.Bool
	return func(c string) error {
		if c == call && armed.CompareAndSwap(true, false) {
			fn()
		}
		return nil
	}, &armed
}

// An out-of-band fault (the HSA system event handler) that arrives while
// Record is inside the driver: the device is lost and its pending events
// failed before Record tracks its event. Before the fix the event was
// tracked after the fan-out and nothing ever looked at it again: Wait never
// returned without a deadline.
func TestRecordRacingAnOutOfBandFaultNeverLeavesAnEventPending(t *testing.T) {
	var sim *simgpu.Device
	hook, armed := onceIn("Record", func() {
		require.True(t, sim.InjectAsyncFault(0xbad000, "page not present"))
	})
	r := newRig(t, simgpu.Config{OnCall: hook, DropCallbacks: true})
	sim = r.sim
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Hour), flag))
	before, err := s.Record()
	require.NoError(t, err)

	armed.Store(true)
	ev, err := s.Record()
	require.ErrorIs(t, err, runtime.ErrDeviceLost, "the device was lost before Record could track its event")
	require.Nil(t, ev)
	var fe *runtime.FaultError
	require.ErrorAs(t, err, &fe)
	require.EqualValues(t, 0xbad000, fe.Address)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Same(t, fe, errAs(before.Wait(ctx)), "the event recorded before the fault failed with it")
}

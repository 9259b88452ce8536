package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// callLog records the driver calls made after the runtime declared the
// device lost.
type callLog struct {
	mu    sync.Mutex
	dev   *runtime.Device
	calls []string
}

func (l *callLog) hook(call string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dev != nil && l.dev.Lost() != nil {
		l.calls = append(l.calls, call)
	}
	return nil
}

func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// "Every later call fails at once without calling into the driver": every
// public method of Device, Stream, Event, Buffer, Module and Kernel, after
// the loss, makes no driver call; Device.Close makes exactly one, the
// driver's own Close (which releases the context). The loss happens inside
// TimeGPU, whose timing events were destroyed through the driver after
// Synchronize had returned the fault before the fix.
func TestNoDriverCallAfterTheDeviceIsLost(t *testing.T) {
	log := &callLog{}
	r := newRig(t, simgpu.Config{GPUTimer: true, OnCall: log.hook})
	log.mu.Lock()
	log.dev = r.dev
	log.mu.Unlock()
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	idle, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	flag := mustAlloc(t, r.dev)
	landed, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, landed.Wait(context.Background()))

	_, err = s.TimeGPU(context.Background(), func() error {
		return s.Launch(r.oob, one, buf, uint32(1), uint64(1)<<40)
	})
	require.ErrorIs(t, err, runtime.ErrDeviceFault)
	require.Empty(t, log.take(), "TimeGPU called the driver after it returned the fault")

	// The monitor may be finishing its last sweep: it asks nothing more, but
	// give an in-flight query (before the loss) time to return.
	time.Sleep(20 * time.Millisecond)
	log.take()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Device.Alloc", func() error { _, err := r.dev.Alloc(4); return err }},
		{"Device.NewStream", func() error { _, err := r.dev.NewStream(); return err }},
		{"Device.LoadImage", func() error { _, err := r.dev.LoadImage([]byte("m"), specsFor(simgpu.Empty)); return err }},
		{"Device.LoadModule", func() error { _, err := r.dev.LoadModule("testkernels"); return err }},
		{"Module.Kernel", func() error { _, err := r.mod.Kernel("empty"); return err }},
		{"Stream.Launch", func() error { return s.Launch(r.fill, one, buf, uint32(1), uint32(1)) }},
		{"Stream.Record", func() error { _, err := s.Record(); return err }},
		{"Stream.Synchronize", func() error { return s.Synchronize(ctx) }},
		{"Stream.TimeGPU", func() error { _, err := s.TimeGPU(ctx, func() error { return nil }); return err }},
		{"Event.Wait", func() error { return landed.Wait(ctx) }},
		{"Buffer.Write", func() error { return buf.Write(0, []byte{1}) }},
		{"Buffer.Read", func() error { return buf.Read(0, []byte{1}) }},
		{"Upload", func() error { return runtime.Upload(buf, []uint32{1}) }},
		{"Download", func() error { return runtime.Download(buf, []uint32{1}) }},
		{"Buffer.Free", func() error { return flag.Free() }},
		{"Stream.Close", func() error { return idle.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if tc.name != "Event.Wait" {
				require.ErrorIs(t, err, runtime.ErrDeviceLost)
			}
			require.Empty(t, log.take(), "driver calls after the loss")
		})
	}
	// Reads that never fail.
	require.Equal(t, runtime.Landed, landed.State())
	require.NoError(t, landed.Err())
	require.NotEmpty(t, r.dev.String()+r.dev.Info().Name+string(r.dev.Backend())+s.LastKernel()+r.fill.Name()+landed.Kernel())
	require.Empty(t, log.take(), "driver calls after the loss")

	require.NoError(t, r.dev.Close())
	require.Equal(t, []string{"Close"}, log.take(), "Close on a lost device only releases it")
}

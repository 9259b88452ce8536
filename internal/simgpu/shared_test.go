package simgpu

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/runtime/driver"
)

// TestSharedMemoryOverTheDefaultNeedsARaise proves the simulated driver
// treats shared memory as CUDA does, which the runtime's tests rely on: a
// launch whose static plus dynamic shared memory passes 48 KiB is
// CodeInvalidValue until SetMaxDynamicShared covers it; a raise past the
// opt-in maximum (static included) is CodeInvalidValue; a lower raise
// lowers the limit; and with NoSharedRaise functions have no
// driver.SharedMemRaiser and the device reports no opt-in maximum.
func TestSharedMemoryOverTheDefaultNeedsARaise(t *testing.T) {
	k := Empty
	k.StaticShared = 1024
	dev, err := New(Config{Devices: 1, Kernels: []KernelDef{k}}).Open(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	require.Equal(t, DefaultMaxSharedOptin, dev.Info().MaxSharedOptin)
	m, err := dev.LoadModule([]byte("m"))
	require.NoError(t, err)
	fn, err := m.Function("empty")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	one := driver.Dim3{X: 1, Y: 1, Z: 1}
	launch := func(shmem int) error { return s.Launch(fn, one, one, uint32(shmem), nil) }

	require.NoError(t, launch(driver.DefaultSharedMem-1024))
	require.ErrorIs(t, launch(driver.DefaultSharedMem-1023), CodeInvalidValue)
	r, ok := fn.(driver.SharedMemRaiser)
	require.True(t, ok)
	require.ErrorIs(t, r.SetMaxDynamicShared(DefaultMaxSharedOptin-1023), CodeInvalidValue)
	require.NoError(t, r.SetMaxDynamicShared(DefaultMaxSharedOptin-1024))
	require.NoError(t, launch(DefaultMaxSharedOptin-1024))
	require.NoError(t, r.SetMaxDynamicShared(64<<10))
	require.ErrorIs(t, launch(80<<10), CodeInvalidValue, "a lower raise lowers the limit")
	require.EqualValues(t, 3, dev.(*Device).SharedRaises.Load())
	require.Equal(t, DefaultMaxSharedOptin-1024, dev.(*Device).MaxDynamicShared("empty"), "the largest set")
	require.NoError(t, s.Destroy())

	plain, err := New(Config{Devices: 1, Kernels: []KernelDef{k}, NoSharedRaise: true}).Open(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, plain.Close()) }()
	require.Zero(t, plain.Info().MaxSharedOptin)
	pm, err := plain.LoadModule([]byte("m"))
	require.NoError(t, err)
	pfn, err := pm.Function("empty")
	require.NoError(t, err)
	_, ok = pfn.(driver.SharedMemRaiser)
	require.False(t, ok)
}

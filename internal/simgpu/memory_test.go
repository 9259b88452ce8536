package simgpu

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/runtime/driver"
)

// TestBytesFindsTheAllocationAroundAnAddress proves Bytes, which every
// kernel twin reads memory through, over many allocations: a view at an
// allocation's start, middle and last byte is that allocation's memory; an
// address below the first allocation, in the padding between two, past the
// last, or a view running past its allocation's end is CodeIllegalAddr; and a
// freed allocation's addresses are illegal while its neighbours stay found.
func TestBytesFindsTheAllocationAroundAnAddress(t *testing.T) {
	dev, err := New(Config{Devices: 1, Memory: 1 << 20}).Open(0)
	require.NoError(t, err)
	sim := dev.(*Device)
	defer func() { require.NoError(t, sim.Close()) }()

	sizes := []uint64{100, 256, 1, 300, 4096, 7}
	ptrs := make([]driver.Ptr, len(sizes))
	for i, n := range sizes {
		ptrs[i], err = sim.Alloc(n)
		require.NoError(t, err)
		b, err := sim.Bytes(ptrs[i], n)
		require.NoError(t, err)
		for j := range b {
			b[j] = byte(i + 1) // each allocation's bytes name it
		}
	}
	owner := func(p driver.Ptr, n uint64) (byte, error) {
		b, err := sim.Bytes(p, n)
		if err != nil {
			return 0, err
		}
		require.Len(t, b, int(n))
		for _, v := range b[1:] {
			require.Equal(t, b[0], v, "a view spans one allocation")
		}
		return b[0], nil
	}
	for i, p := range ptrs {
		n := sizes[i]
		for _, at := range []struct{ off, n uint64 }{{0, n}, {n / 2, n - n/2}, {n - 1, 1}} {
			got, err := owner(p+driver.Ptr(at.off), at.n)
			require.NoError(t, err, "allocation %d, offset %d", i, at.off)
			require.Equal(t, byte(i+1), got, "allocation %d, offset %d", i, at.off)
		}
		_, err := sim.Bytes(p, n+1)
		require.ErrorIs(t, err, CodeIllegalAddr, "a view past allocation %d's end", i)
		if n%256 != 0 {
			_, err = sim.Bytes(p+driver.Ptr(n), 1)
			require.ErrorIs(t, err, CodeIllegalAddr, "the padding after allocation %d", i)
		}
	}
	_, err = sim.Bytes(ptrs[0]-1, 1)
	require.ErrorIs(t, err, CodeIllegalAddr, "below the first allocation")
	_, err = sim.Bytes(ptrs[len(ptrs)-1]+4096, 1)
	require.ErrorIs(t, err, CodeIllegalAddr, "past the last allocation")

	require.NoError(t, sim.Free(ptrs[3]))
	_, err = sim.Bytes(ptrs[3], 1)
	require.ErrorIs(t, err, CodeIllegalAddr, "a freed allocation")
	_, err = sim.Bytes(ptrs[3]+299, 1)
	require.ErrorIs(t, err, CodeIllegalAddr, "a freed allocation's last byte")
	for _, i := range []int{2, 4} {
		got, err := owner(ptrs[i], sizes[i])
		require.NoError(t, err)
		require.Equal(t, byte(i+1), got, "allocation %d after its neighbour's free", i)
	}
	p, err := sim.Alloc(8)
	require.NoError(t, err)
	got, err := owner(p, 8)
	require.NoError(t, err)
	require.Equal(t, byte(0), got, "a new allocation is zeroed and found")
}

// BenchmarkBytes looks up an address among the allocations a small model's
// simulated decode holds (a few hundred).
func BenchmarkBytes(b *testing.B) {
	dev, err := New(Config{Devices: 1, Memory: 1 << 30}).Open(0)
	require.NoError(b, err)
	sim := dev.(*Device)
	defer func() { require.NoError(b, sim.Close()) }()
	ptrs := make([]driver.Ptr, 500)
	for i := range ptrs {
		ptrs[i], err = sim.Alloc(4096)
		require.NoError(b, err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := sim.Bytes(ptrs[i%len(ptrs)]+64, 64); err != nil {
			b.Fatal(err)
		}
	}
}

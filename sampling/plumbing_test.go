package sampling

// The plumbing check: the TestGPU* tests re-run against a simulated device
// that poses as CUDA (sm_90), so LoadModule reads the real PTX artifact's
// metadata and the runtime checks every launch's arguments against it, while
// the "kernels" are the CPU mirrors run as Go functions over simulated device
// memory. It proves the entry points' argument lists, buffer sizes, routing,
// launch slots and the verification ring before any GPU run. It proves
// nothing about the kernels' numerics: those equalities are tautological
// here, and the real GPU run checks them.

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime/driver"
)

const envPlumbing = "HIPGO_SAMPLING_PLUMBING"

func TestPlumbingOfTheGPUTestsOnASimulatedCUDADevice(t *testing.T) {
	if os.Getenv(envPlumbing) == "1" {
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestGPU", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envPlumbing+"=1", "HIPGO_REQUIRE_GPU=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "--- SKIP", "every GPU test ran against the simulation")
	require.Contains(t, string(out), "--- PASS: TestGPUGumbelMaxMatchesTheCPUReference")
	require.Contains(t, string(out), "--- PASS: TestGPUDeferredPathNeverSynchronizes")
}

// plumbingDriver is the simulated CUDA device with the sampler kernels;
// tune, when given, adjusts its configuration (a driver-call hook, say).
func plumbingDriver(tune ...func(*simgpu.Config)) *simgpu.Driver {
	ks := []simgpu.KernelDef{simgpu.SpinNs, simgpu.FillU32, simgpu.OOBWriteU32, simgpu.Empty,
		{Name: "bounded_fill_u32", ParamSizes: []int{8, 4, 4}, Run: simgpu.FillU32.Run},
	}
	for _, dt := range []DType{F32, BF16, F16} {
		ks = append(ks,
			simgpu.KernelDef{Name: "gumbel_max_" + dt.suffix(), ParamSizes: []int{8, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8}, Run: simGumbel(dt)},
			simgpu.KernelDef{Name: "rejection_" + dt.suffix(), ParamSizes: []int{8, 4, 4, 4, 8, 4, 4, 4, 8, 8, 8}, Run: simRejection(dt)})
	}
	cfg := simgpu.Config{Devices: 1, Kind: driver.CUDA, Format: driver.PTX, Arch: "sm_90", Memory: 16 << 30, Kernels: ks}
	for _, f := range tune {
		f(&cfg)
	}
	return simgpu.New(cfg)
}

func simRows(d *simgpu.Device, dt DType, p driver.Ptr, B, V, ld int) []float32 {
	raw, err := d.Bytes(p, uint64(((B-1)*ld+V)*dt.size()))
	if err != nil {
		panic(err)
	}
	out := make([]float32, B*V)
	for r := 0; r < B; r++ {
		for i := 0; i < V; i++ {
			o := (r*ld + i) * dt.size()
			switch dt {
			case F32:
				out[r*V+i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[o:]))
			case BF16:
				out[r*V+i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[o:])) << 16)
			case F16:
				out[r*V+i] = halfToFloat(binary.LittleEndian.Uint16(raw[o:]))
			}
		}
	}
	return out
}

func words(d *simgpu.Device, p uint64, n int) []byte {
	b, err := d.Bytes(driver.Ptr(p), uint64(4*n))
	if err != nil {
		panic(err)
	}
	return b
}

// simPartial writes each row's best (score, index) into its first split slot
// and (-inf, none) into the others: what the merge reduces to.
// simGumbel is gumbel_max_*: each row's token from the CPU mirror, and the
// contract on the arrival counters checked: the launch must find them at 0
// (and leaves them at 0).
func simGumbel(dt DType) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		B, V, ld := int(a[1]), int(a[2]), int(a[3])
		invT := math.Float32frombits(uint32(a[4]))
		key := Key{uint32(a[5]), uint32(a[6])}
		rows := simRows(d, dt, driver.Ptr(a[0]), B, V, ld)
		arrivals, tok, st := words(d, a[10], B), words(d, a[11], B), words(d, a[12], B)
		for r := 0; r < B; r++ {
			if n := binary.LittleEndian.Uint32(arrivals[4*r:]); n != 0 {
				return fmt.Errorf("gumbel_max: arrival counter of row %d is %d at launch, not 0", r, n)
			}
			bi, status := gumbelRow(rows[r*V:(r+1)*V], uint32(r), invT, key)
			binary.LittleEndian.PutUint32(tok[4*r:], bi)
			binary.LittleEndian.PutUint32(st[4*r:], uint32(status))
		}
		return nil
	}
}

func simRejection(dt DType) simgpu.KernelFunc {
	return func(d *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		B, V, ld := int(a[1]), int(a[2]), int(a[3])
		key := Key{uint32(a[5]), uint32(a[6])}
		maxRounds := uint32(a[7])
		rows := simRows(d, dt, driver.Ptr(a[0]), B, V, ld)
		prm := words(d, a[4], 4*B)
		tok, ok, rounds := words(d, a[8], B), words(d, a[9], B), words(d, a[10], B)
		var s rejScratch
		for r := 0; r < B; r++ {
			var p [4]float32
			for j := range p {
				p[j] = math.Float32frombits(binary.LittleEndian.Uint32(prm[4*(4*r+j):]))
			}
			t, st, n := rejectionRow(rows[r*V:(r+1)*V], uint32(r), p, key, maxRounds, RejectionThreads, &s)
			binary.LittleEndian.PutUint32(tok[4*r:], t)
			binary.LittleEndian.PutUint32(ok[4*r:], uint32(st))
			binary.LittleEndian.PutUint32(rounds[4*r:], n)
		}
		return nil
	}
}

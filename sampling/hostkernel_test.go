package sampling

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// The kernels in kernels/src/sampling.cu, compiled for the host with
// clang++-19 and run under an emulation of a GPU block (kernels/hostemu:
// one fiber per GPU thread, switched at barriers, function statics for
// shared memory; testdata/hostkernel holds the driver), produce exactly the
// tokens, statuses and round counts of their Go mirrors GumbelMaxCPU/gumbelRow and RejectionCPU/
// rejectionRow. This checks the kernels' logic, indexing, reductions,
// barriers and the Go mirrors' claim of bit-exactness. It does not check the
// GPU compilers, the hardware's float behaviour, wave-level scheduling or
// memory-model subtleties beyond what the barriers order: the GPU run does.

// hostBuild is one compiled driver: its path and the block sizes it was
// built with.
type hostBuild struct {
	path              string
	gumbel, rejection int
}

// buildHostDriver compiles testdata/hostkernel/driver.cc around
// kernels/src/sampling.cu, or around kernels/src/sampling.metal when metal is
// set. For Metal, the test's metal_stdlib stands in for Apple's, and the
// source is copied with its [[threadgroup(n)]] attributes renamed, because
// the stand-in must define the address-space word "threadgroup" away.
func buildHostDriver(t *testing.T, clang string, metal bool, gumbel, rejection int) hostBuild {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, fmt.Sprintf("driver-%d-%d", gumbel, rejection))
	args := []string{"-std=c++20", "-O2", "-pthread", "-fno-strict-aliasing",
		"-Wall", "-Wno-unknown-pragmas", "-Werror",
		fmt.Sprintf("-DSP_GUMBEL_THREADS=%d", gumbel),
		fmt.Sprintf("-DSP_REJ_THREADS=%d", rejection), "-I", "../kernels/hostemu"}
	if metal {
		src, err := os.ReadFile("../kernels/src/sampling.metal")
		require.NoError(t, err)
		src = bytes.ReplaceAll(src, []byte("[[threadgroup("), []byte("[[threadgroup_index("))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sampling.metal"), src, 0o644))
		args = append(args, "-DSP_METAL", "-Wno-unknown-attributes", "-I", dir, "-I", "../kernels/hostemu/metal")
	} else {
		shim, err := filepath.Abs("../kernels/hostemu/hostemu.h")
		require.NoError(t, err)
		args = append(args, fmt.Sprintf("-DSAMPLING_HOST_SHIM=%q", shim), "-I", "../kernels/src")
	}
	cmd := exec.Command(clang, append(args, "testdata/hostkernel/driver.cc", "-o", out)...)
	msg, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "%s\n%s", cmd, msg)
	return hostBuild{out, gumbel, rejection}
}

// Element types the kernels read.
const (
	dtF32 = iota
	dtBF16
	dtF16
)

// hostJob is one kernel launch for the driver, with its input kept as the
// float32 values the Go mirror sees.
type hostJob struct {
	kind      byte // 'G' or 'R'
	dtype     uint32
	B, V, ld  int
	shift     uint32
	raw       []uint32  // elements as stored: f32 bits, or 16-bit patterns
	rows      []float32 // B*V values the kernel reads (exact conversion of raw)
	invTemp   float32
	key       Key
	splits    int
	params    []float32 // [B, 4], raw: out-of-range values included
	maxRounds uint32
	nt        int
	outs      [][]uint32 // tokens, status/ok, [rounds]
	partVal   []uint32   // Gumbel: part_val bits, [B, splits]
	partIdx   []uint32
	arrivals  []uint32   // Gumbel: the arrival counters after the launch (must be 0)
	traces    [][]uint32 // rejection: per row, SP_TRACE tag/value pairs
}

func (j *hostJob) encode(buf *bytes.Buffer) {
	w := func(v uint32) { _ = binary.Write(buf, binary.LittleEndian, v) }
	w(uint32(j.kind))
	w(j.shift)
	w(j.dtype)
	w(uint32(j.B))
	w(uint32(j.V))
	w(uint32(j.ld))
	if j.kind == 'G' {
		w(math.Float32bits(j.invTemp))
		w(j.key[0])
		w(j.key[1])
		w(uint32(j.splits))
	} else {
		w(j.key[0])
		w(j.key[1])
		w(j.maxRounds)
		for _, p := range j.params {
			w(math.Float32bits(p))
		}
	}
	if j.dtype == dtF32 {
		for _, v := range j.raw {
			w(v)
		}
		return
	}
	n := len(j.raw)
	for i := 0; i < n; i += 2 {
		lo, hi := j.raw[i], uint32(0)
		if i+1 < n {
			hi = j.raw[i+1]
		}
		w(lo | hi<<16)
	}
}

func runHost(t *testing.T, b hostBuild, jobs []*hostJob) {
	t.Helper()
	var in bytes.Buffer
	for _, j := range jobs {
		j.encode(&in)
	}
	_ = binary.Write(&in, binary.LittleEndian, uint32(0))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.path)
	cmd.Stdin = &in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoErrorf(t, cmd.Run(), "driver (a deadlock means a barrier not reached by the whole block): %s", errb.String())
	for _, j := range jobs {
		n := 2
		if j.kind == 'R' {
			n = 3
		}
		j.outs = make([][]uint32, n)
		for k := range j.outs {
			j.outs[k] = make([]uint32, j.B)
			require.NoError(t, binary.Read(&out, binary.LittleEndian, j.outs[k]))
		}
		if j.kind == 'G' {
			j.partVal, j.partIdx = make([]uint32, j.B*j.splits), make([]uint32, j.B*j.splits)
			require.NoError(t, binary.Read(&out, binary.LittleEndian, j.partVal))
			require.NoError(t, binary.Read(&out, binary.LittleEndian, j.partIdx))
			j.arrivals = make([]uint32, j.B)
			require.NoError(t, binary.Read(&out, binary.LittleEndian, j.arrivals))
			continue
		}
		j.traces = make([][]uint32, j.B)
		for r := range j.traces {
			var n uint32
			require.NoError(t, binary.Read(&out, binary.LittleEndian, &n))
			j.traces[r] = make([]uint32, n)
			require.NoError(t, binary.Read(&out, binary.LittleEndian, j.traces[r]))
		}
	}
	require.Zero(t, out.Len(), "driver wrote more than expected")
}

// f16ToF32 decodes IEEE binary16 with float64 arithmetic, independently of
// the kernel's bit manipulation.
func f16ToF32(h uint16) float32 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch e {
	case 0:
		return float32(s * m * math.Pow(2, -24))
	case 31:
		if m == 0 {
			return float32(s * math.Inf(1))
		}
		return float32(math.NaN())
	}
	return float32(s * (1 + m/1024) * math.Pow(2, float64(e-15)))
}

// newHostJob fills raw and rows for a B x V batch with row stride ld from
// gen, which returns a float32 logit for f32 or a 16-bit pattern otherwise.
func newHostJob(kind byte, dtype uint32, B, V, ld int, shift uint32, gen func(r, i int) float32) *hostJob {
	j := &hostJob{kind: kind, dtype: dtype, B: B, V: V, ld: ld, shift: shift}
	j.raw = make([]uint32, B*ld)
	j.rows = make([]float32, B*V)
	for r := 0; r < B; r++ {
		for i := 0; i < ld; i++ {
			v := gen(r, i)
			var bits uint32
			var f float32
			switch dtype {
			case dtF32:
				bits, f = math.Float32bits(v), v
			case dtBF16:
				bits = math.Float32bits(v) >> 16
				f = math.Float32frombits(bits << 16)
			default:
				bits = uint32(f16Bits(v))
				f = f16ToF32(uint16(bits))
			}
			j.raw[r*ld+i] = bits
			if i < V {
				j.rows[r*V+i] = f
			}
		}
	}
	return j
}

// f16Bits rounds toward zero into binary16 (any pattern is fine: the test
// only needs the kernel and the mirror to read the same value), keeping
// infinities and NaN.
func f16Bits(v float32) uint16 {
	if v != v {
		return 0x7e00
	}
	var s uint16
	if v < 0 {
		s, v = 0x8000, -v
	}
	if v >= 65520 {
		return s | 0x7c00
	}
	if v < 0x1p-14 {
		return s | uint16(v*(1<<24))
	}
	e := math.Floor(math.Log2(float64(v)))
	m := float64(v)/math.Pow(2, e) - 1
	return s | uint16(int(e)+15)<<10 | uint16(m*1024)
}

// logitGen returns a generator of mixed rows: random logits, either with
// full float32 mantissas or on a coarse grid (ties), with a sprinkle of -inf
// and NaN, and some special rows: all -inf, all NaN, +inf present, a single
// finite logit.
func logitGen(rng *rand.Rand, V int) func(r, i int) float32 {
	kinds := map[int]int{}
	return func(r, i int) float32 {
		k, ok := kinds[r]
		if !ok {
			k = rng.IntN(12)
			kinds[r] = k
		}
		switch k {
		case 0:
			return negInf
		case 1:
			if i%2 == 0 {
				return nan
			}
			return negInf
		case 2:
			if i == V/2 || i == V-1 {
				return posInf
			}
		case 3:
			if i == (r*7)%V {
				return 1.5
			}
			return negInf
		}
		switch x := rng.Float64(); {
		case x < 0.05:
			return negInf
		case x < 0.07:
			return nan
		}
		if k%2 == 0 { // full-mantissa values: every rounding step matters
			return float32(rng.NormFloat64() * 2.5)
		}
		return float32(math.Round(rng.NormFloat64()*2.5*16)) / 16 // ties
	}
}

func TestHostKernelsMatchCPUMirrors(t *testing.T) {
	clang := testenv.LookPath(t, "clang++-19")
	rng := rand.New(rand.NewPCG(21, 22))

	// Few threads per block: each thread owns many groups, the rejection
	// candidate search runs over several chunks, every split boundary lands
	// mid-row.
	t.Run("cuda-hip-source/small-blocks", func(t *testing.T) {
		b := buildHostDriver(t, clang, false, 16, 4)
		jobs := smallBlockJobs(rng, b)
		runHost(t, b, jobs)
		checkHostJobs(t, jobs)
	})
	t.Run("metal-source/small-blocks", func(t *testing.T) {
		b := buildHostDriver(t, clang, true, 16, 4)
		jobs := smallBlockJobs(rng, b)
		runHost(t, b, jobs)
		checkHostJobs(t, jobs)
	})

	// The shipped block sizes (256/256/1024), on a few wide rows.
	for _, metal := range []bool{false, true} {
		name := "cuda-hip-source/production-blocks"
		if metal {
			name = "metal-source/production-blocks"
		}
		t.Run(name, func(t *testing.T) {
			b := buildHostDriver(t, clang, metal, GumbelThreads, RejectionThreads)
			var jobs []*hostJob
			for _, V := range []int{4099, 70001} {
				gen := logitGen(rng, V)
				const B = 3
				j := newHostJob('G', dtF32, B, V, V, 0, gen)
				j.invTemp, j.key, j.splits = 1/0.8, Key{rng.Uint32(), rng.Uint32()}, GumbelSplits(B, V, 4)
				jobs = append(jobs, j)
				// Flat rows and tight filters, so candidates get rejected
				// and the pivots run for several rounds.
				r := newHostJob('R', dtF32, B, V, V+1, 1, func(row, i int) float32 {
					return float32(rng.NormFloat64() * 0.7)
				})
				r.key, r.maxRounds, r.nt = Key{rng.Uint32(), rng.Uint32()}, MaxRounds, b.rejection
				r.params = []float32{0.8, 0, 0.05, 0, 1, 7, 0.95, 0.01, 1.3, 0, 0.3, 0.4}
				jobs = append(jobs, r)
			}
			runHost(t, b, jobs)
			checkHostJobs(t, jobs)
		})
	}
}

// smallBlockJobs: every vocabulary size class (one partial group, exact
// groups, many groups per thread), every input type, aligned and unaligned
// rows, several split counts and round caps, and raw parameters including
// out-of-range ones.
func smallBlockJobs(rng *rand.Rand, b hostBuild) []*hostJob {
	var jobs []*hostJob
	for _, V := range []int{1, 2, 3, 5, 17, 64, 301, 1027} {
		for _, dtype := range []uint32{dtF32, dtBF16, dtF16} {
			ld, shift := V, uint32(0)
			if rng.IntN(2) == 0 {
				ld, shift = V+1+rng.IntN(3), uint32(rng.IntN(4))
			}
			const B = 12
			gen := logitGen(rng, V)
			for _, splits := range []int{1, 3, 7} {
				j := newHostJob('G', dtype, B, V, ld, shift, gen)
				j.invTemp = []float32{0, 1, 1 / 0.7, 0.4, float32(math.NaN()), -1}[rng.IntN(6)]
				j.key, j.splits = Key{rng.Uint32(), rng.Uint32()}, splits
				jobs = append(jobs, j)
			}
			for _, mr := range []uint32{32, 2, 1} {
				j := newHostJob('R', dtype, B, V, ld, shift, gen)
				j.key, j.maxRounds, j.nt = Key{rng.Uint32(), rng.Uint32()}, mr, b.rejection
				j.params = randomRawParams(rng, B, V)
				jobs = append(jobs, j)
			}
		}
	}
	return jobs
}

// randomRawParams: mostly valid rows, some greedy, some with values out of
// range that the kernel must read as "off" exactly as the mirror does.
func randomRawParams(rng *rand.Rand, B, V int) []float32 {
	pick := func(vals ...float32) float32 { return vals[rng.IntN(len(vals))] }
	p := make([]float32, 4*B)
	for r := 0; r < B; r++ {
		p[4*r+0] = pick(1, 0.7, 1.9, 0, 1, 0.3, -1, nan, posInf, 1e-45)
		p[4*r+1] = pick(0, 0, 1, 2, 5, float32(V), float32(V+3), -2, nan, 2.5)
		p[4*r+2] = pick(1, 1, 0.9, 0.5, 0.2, 0.99, 0, 1.5, nan, -0.3)
		p[4*r+3] = pick(0, 0, 0.05, 0.3, 1, 1.5, nan, -0.1)
	}
	return p
}

// checkHostJobs compares every output with the Go mirror: tokens, statuses
// and round counts, and bit for bit the Gumbel partials (score and index of
// every split) and the rejection trace (max, S, and per round the scan
// total, target, crossing thread, residual, candidate, pivot, masses and
// counts). The traces make the comparison sensitive to any float32
// difference, not only to those that happen to change a token.
func checkHostJobs(t *testing.T, jobs []*hostJob) {
	t.Helper()
	s := rejScratch{tracing: true}
	rows, rounds, traced := 0, 0, 0
	for n, j := range jobs {
		for r := 0; r < j.B; r++ {
			row := j.rows[r*j.V : (r+1)*j.V]
			rows++
			if j.kind == 'G' {
				tok, st := gumbelRow(row, uint32(r), j.invTemp, j.key)
				require.Equalf(t, []uint32{tok, uint32(st)}, []uint32{j.outs[0][r], j.outs[1][r]},
					"job %d (Gumbel dtype %d V %d ld %d splits %d inv_temp %v) row %d", n, j.dtype, j.V, j.ld, j.splits, j.invTemp, r)
				require.Zerof(t, j.arrivals[r], "job %d row %d: the launch left its arrival counter non-zero", n, r)
				if j.splits == 1 {
					continue // one block per row writes the token itself, no partial
				}
				ng := uint32(j.V+3) / 4
				per := (ng + uint32(j.splits) - 1) / uint32(j.splits)
				for sp := 0; sp < j.splits; sp++ {
					g0 := min(uint32(sp)*per, ng)
					g1 := min(g0+per, ng)
					v, i := gumbelSlice(row, uint32(r), j.invTemp, j.key, g0, g1)
					k := r*j.splits + sp
					require.Equalf(t, []uint32{math.Float32bits(v), i}, []uint32{j.partVal[k], j.partIdx[k]},
						"job %d row %d split %d: partial (score bits, index)", n, r, sp)
				}
				continue
			}
			var prm [4]float32
			copy(prm[:], j.params[4*r:4*r+4])
			s.trace = s.trace[:0]
			tok, st, rd := rejectionRow(row, uint32(r), prm, j.key, j.maxRounds, j.nt, &s)
			require.Equalf(t, []uint32{tok, uint32(st), rd}, []uint32{j.outs[0][r], j.outs[1][r], j.outs[2][r]},
				"job %d (rejection dtype %d V %d ld %d max_rounds %d params %v) row %d", n, j.dtype, j.V, j.ld, j.maxRounds, prm, r)
			require.Less(t, j.outs[0][r], uint32(j.V))
			require.Equalf(t, fmtTrace(s.trace), fmtTrace(j.traces[r]), "job %d row %d: trace", n, r)
			rounds += int(rd)
			traced += len(s.trace) / 2
		}
	}
	t.Logf("%d jobs, %d rows identical to the Go mirrors (%d rejection rounds, %d traced values)", len(jobs), rows, rounds, traced)
}

func fmtTrace(tr []uint32) []string {
	out := make([]string, 0, len(tr)/2)
	for i := 0; i+1 < len(tr); i += 2 {
		out = append(out, fmt.Sprintf("%c=%#x", rune(tr[i]), tr[i+1]))
	}
	return out
}

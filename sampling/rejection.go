package sampling

import (
	"math"
	"sync"
)

// RejectionThreads is the block size of rejection_* (one block per row).
const RejectionThreads = 1024

// RejectionResult holds the rejection sampler's three outputs, one entry
// per row: the token, its Status (as the kernel's ok array) and the number
// of rounds (candidate draws) it took: 0 for greedy, +inf and invalid rows.
type RejectionResult struct {
	Tokens []uint32
	OK     []uint32
	Rounds []uint32
}

// RejectionCPU runs the dual-pivot rejection sampler (kernels/src/sampling.cu,
// rejection_f32) on the CPU with the kernel's exact arithmetic: the same
// passes, per-thread partial sums for a 1024-thread block, reduction and scan
// trees, pivots and per-round uniforms. Tokens, statuses and round counts
// equal the kernel's bit for bit.
//
// params has one entry per row or one for all rows; maxRounds is in [1, 32].
// The outputs must each have length B. Rows with no finite or +inf logit get
// token 0 and status StatusInvalidRow and are named in the returned
// *InvalidLogitsError; every row is written either way.
func RejectionCPU(out RejectionResult, logits []float32, B, V int, params []Params, key Key, maxRounds int) error {
	return rejectionCPU("sampling.RejectionCPU", out, logits, B, V, params, key, maxRounds, RejectionThreads)
}

func rejectionCPU(entry string, out RejectionResult, logits []float32, B, V int, params []Params, key Key, maxRounds, nt int) error {
	if err := checkShape(entry, logits, B, V, len(out.Tokens)); err != nil {
		return err
	}
	if len(out.OK) != B || len(out.Rounds) != B {
		return shapeErr(entry, "len(OK) = %d, len(Rounds) = %d, want B = %d", len(out.OK), len(out.Rounds), B)
	}
	if V > MaxKernelVocab {
		return shapeErr(entry, "V = %d: the rejection kernel takes V <= %d", V, MaxKernelVocab)
	}
	if err := checkParams(entry, params, B); err != nil {
		return err
	}
	if err := checkMaxRounds(maxRounds); err != nil {
		return err
	}
	var bad badRows
	forRows(B, V, &rejPool, func(r int, s *rejScratch) {
		var prm [4]float32
		prm[0], prm[1], prm[2], prm[3] = packRow(rowParams(params, r), V)
		tok, st, n := rejectionRow(logits[r*V:(r+1)*V], uint32(r), prm, key, uint32(maxRounds), nt, s)
		out.Tokens[r], out.OK[r], out.Rounds[r] = tok, uint32(st), n
		if st == StatusInvalidRow {
			bad.add(r)
		}
	})
	return bad.err(entry)
}

// rejScratch is one worker's scratch: per-thread accumulators (length nt;
// only the first nact threads of a row ever hold anything) and the row's
// per-element weights, which the kernel recomputes in every pass and the
// mirror computes once (the same function of the same inputs).
type rejScratch struct {
	d, d0, d1, m0, m1, scan, lane []float32
	wq                            [][4]float32
	y, f, dw                      []float32

	// tracing makes rejectionRow record the values the kernel's SP_TRACE
	// points record (host emulation test only).
	tracing bool
	trace   []uint32
}

func (s *rejScratch) rec(tag byte, v uint32) {
	if s.tracing {
		s.trace = append(s.trace, uint32(tag), v)
	}
}

var rejPool = sync.Pool{New: func() any { return new(rejScratch) }}

func (s *rejScratch) size(nt, V int) {
	if len(s.d) < nt {
		s.d, s.d0, s.d1 = make([]float32, nt), make([]float32, nt), make([]float32, nt)
		s.m0, s.m1 = make([]float32, nt), make([]float32, nt)
		s.scan, s.lane = make([]float32, nt), make([]float32, nt)
		s.wq = make([][4]float32, nt)
	}
	if len(s.y) < V {
		s.y, s.f, s.dw = make([]float32, V), make([]float32, V), make([]float32, V)
	}
}

// rejWeights is sp_weights: y = M - l, the filter weight f = e^-y and the
// draw weight d = e^(-y/T).
func rejWeights(l, M, invT float32) (y, f, d float32) {
	y = M - l
	f = spExp(-y)
	if invT == 1 {
		return y, f, f
	}
	return y, f, spExp(-float32(y * invT))
}

// treeSum is sp_reduce_sum over nt entries of which only a[:n] can be
// non-zero (a is modified). Steps whose partner index is >= n add zeros,
// which is exact, so they are skipped.
func treeSum(a []float32, n, nt int) float32 {
	for s := nt / 2; s > 0; s >>= 1 {
		for t := 0; t < s && t+s < n; t++ {
			a[t] = a[t] + a[t+s]
		}
	}
	return a[0]
}

// scanIncl is sp_scan_incl (Hillis-Steele) on a[:n]: entry t only ever reads
// entries below it, so the entries past n do not matter.
func scanIncl(a []float32) {
	n := len(a)
	for off := 1; off < n; off <<= 1 {
		for t := n - 1; t >= off; t-- {
			a[t] = a[t-off] + a[t]
		}
	}
}

// rejectionRow is one block of rejection_f32 with nt threads. prm is the
// row's packed {temperature, top_k, top_p, min_p}, read as defensively as the
// kernel reads it.
func rejectionRow(row []float32, r uint32, prm [4]float32, key Key, maxRounds uint32, nt int, s *rejScratch) (tok uint32, st Status, rounds uint32) {
	s.size(nt, len(row))
	V := uint32(len(row))
	ngroups := (V + 3) / 4
	nact := int(min(ngroups, uint32(nt)))
	T, kf, pp, mp := prm[0], prm[1], prm[2], prm[3]

	greedy, invT := false, float32(1)
	if T == 0 {
		greedy = true
	} else if T > 0 && T <= math.MaxFloat32 {
		invT = 1 / T
		if !(invT <= math.MaxFloat32) {
			greedy = true
		}
	}
	kOn := kf >= 1 && kf < float32(V)
	var k uint32
	if kOn {
		k = uint32(kf)
	}
	pOn := pp > 0 && pp < 1
	mOn := mp > 0 && mp <= 1
	kpOn := kOn || pOn
	capR := min(max(maxRounds, 1), MaxRounds)

	// Pass 1.
	M, amax := rowMax(row)
	s.rec('M', math.Float32bits(M))
	s.rec('A', amax)
	if !(M > float32(math.Inf(-1))) || amax >= V {
		return 0, StatusInvalidRow, 0
	}
	if math.IsInf(float64(M), 1) || greedy {
		return amax, StatusOK, 0
	}
	ntu := uint32(nt)

	ys, fs, dws := s.y[:V], s.f[:V], s.dw[:V]
	for i := range row {
		ys[i], fs[i], dws[i] = rejWeights(clean(row[i]), M, invT)
	}

	// Pass 2: per-thread S and first proposal masses.
	lo, bound := float32(0), float32(math.Inf(1))
	sAcc, d := s.scan[:nact], s.d[:nact]
	clear(sAcc)
	clear(d)
	for i := uint32(0); i < V; i++ {
		t := (i >> 2) % ntu
		y, f, dw := ys[i], fs[i], dws[i]
		sAcc[t] = sAcc[t] + f
		if y < bound && (!mOn || f >= mp) {
			d[t] = d[t] + dw
		}
	}
	S := treeSum(sAcc, nact, nt)
	targetP := pp * S
	s.rec('S', math.Float32bits(S))

	cand, accepted, used := amax, false, uint32(0)
	for n := uint32(0); n < capR; n++ {
		used = n + 1
		scan := s.scan[:nact]
		copy(scan, d[:nact])
		scanIncl(scan)
		total := scan[nact-1]
		u := Uniform(Philox4x32([4]uint32{n, counterRejection, r, 0}, key)[0])
		target := float32(u * total)
		tstar := uint32(none)
		for t := 0; t < nact; t++ {
			if scan[t] > target {
				tstar = uint32(t)
				break
			}
		}
		var resid float32
		if tstar != none {
			excl := float32(0)
			if tstar > 0 {
				excl = scan[tstar-1]
			}
			resid = target - excl
		}
		s.rec('T', math.Float32bits(total))
		s.rec('U', math.Float32bits(target))
		s.rec('t', tstar)
		s.rec('r', math.Float32bits(resid))

		cand = amax
		if tstar != none {
			ng := (ngroups - tstar + ntu - 1) / ntu
			carry := float32(0)
			for c0 := uint32(0); c0 < ng; c0 += ntu {
				nl := min(ng-c0, ntu)
				lane := s.lane[:nl]
				for j := uint32(0); j < nl; j++ {
					g := tstar + (c0+j)*ntu
					var wq [4]float32
					wj := float32(0)
					for q := uint32(0); q < 4; q++ {
						i := g*4 + q
						if i >= V {
							break
						}
						if ys[i] < bound && (!mOn || fs[i] >= mp) {
							wq[q] = dws[i]
						}
						wj = wj + wq[q]
					}
					lane[j], s.wq[j] = wj, wq
				}
				scanIncl(lane)
				hit := uint32(none)
				for j := uint32(0); j < nl; j++ {
					if carry+lane[j] > resid {
						hit = j
						break
					}
				}
				if hit != none {
					acc := carry
					if hit > 0 {
						acc = carry + lane[hit-1]
					}
					g := tstar + (c0+hit)*ntu
					pick, last := uint32(none), uint32(none)
					for q := uint32(0); q < 4; q++ {
						if w := s.wq[hit][q]; w > 0 {
							last = g*4 + q
							acc = acc + w
							if acc > resid {
								pick = last
								break
							}
						}
					}
					if pick == none {
						pick = last
					}
					if pick != none {
						cand = pick
					}
					break
				}
				carry = carry + lane[nl-1]
			}
		}
		if cand >= V {
			cand = amax
		}
		s.rec('c', cand)

		yc := ys[cand]
		if !kpOn || yc <= lo {
			accepted = true
			break
		}
		pv0 := yc
		ka, kb := math.Float32bits(lo), math.Float32bits(yc)
		pv1 := math.Float32frombits(ka + (kb-ka)/2)

		m0, m1, d0, d1 := s.m0[:nact], s.m1[:nact], s.d0[:nact], s.d1[:nact]
		clear(m0)
		clear(m1)
		clear(d0)
		clear(d1)
		var c0n, c1n uint32
		for i := uint32(0); i < V; i++ {
			t := (i >> 2) % ntu
			y, f, dw := ys[i], fs[i], dws[i]
			mok := !mOn || f >= mp
			if y < pv0 {
				c0n++
				m0[t] = m0[t] + f
				if mok {
					d0[t] = d0[t] + dw
				}
			}
			if y < pv1 {
				c1n++
				m1[t] = m1[t] + f
				if mok {
					d1[t] = d1[t] + dw
				}
			}
		}
		M0, M1 := treeSum(m0, nact, nt), treeSum(m1, nact, nt)
		s.rec('p', math.Float32bits(pv1))
		s.rec('0', math.Float32bits(M0))
		s.rec('1', math.Float32bits(M1))
		s.rec('k', c0n)
		s.rec('K', c1n)
		if !((kOn && c0n >= k) || (pOn && M0 >= targetP)) {
			accepted = true
			break
		}
		if (kOn && c1n >= k) || (pOn && M1 >= targetP) {
			bound = pv1
			copy(d, d1)
		} else {
			lo, bound = pv1, pv0
			copy(d, d0)
		}
	}
	if accepted {
		return cand, StatusOK, used
	}
	return amax, StatusUnconverged, capR
}

package sampling

import (
	"math"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Argpartition is the filtered CPU sampler and the rejection kernel's
// fallback. It applies the one-distribution rule (docs/sampling.md) in float64:
// each active filter decides membership on the untempered row, tie-inclusive,
// independently of the others, and the kept set is their intersection:
//
//   - top-k: the k-th largest logit (with multiplicity) is found by partial
//     selection; a token is kept when its logit is >= it, i.e. fewer than k
//     tokens are strictly more probable;
//   - top-p: tokens are visited in descending order (a sort of the top-k /
//     min-p survivors when either is active, since they form an upper set;
//     otherwise a heap that stops as soon as the mass above reaches p), and
//     a group of equal logits is kept while the mass strictly above it is
//     below p;
//   - min-p: a token is kept when its probability is >= min_p times the
//     largest.
//
// Only top-p needs every token's weight (the row's mass S, summed in chunks
// of 8192 added in chunk order, spread over the cores when B < GOMAXPROCS);
// the other filters decide on logits. The draw is then weighted by the
// tempered row over the kept set: one
// uniform per row (word 0 of philox(key, {0, 2, row, 0}), as Categorical),
// inverse CDF in ascending index order. With every filter off it returns
// exactly Categorical's tokens.
//
// params has one entry per row or one for all rows. Invalid rows (no finite
// or +inf logit) get token 0 and are named in the returned
// *InvalidLogitsError; every row is written either way.
func Argpartition(tokens []uint32, logits []float32, B, V int, params []Params, key Key) error {
	const entry = "sampling.Argpartition"
	if err := checkShape(entry, logits, B, V, len(tokens)); err != nil {
		return err
	}
	if err := checkParams(entry, params, B); err != nil {
		return err
	}
	var bad badRows
	// With fewer rows than cores, each row's weights are spread over the
	// cores instead (B = 1 decode with a large vocabulary).
	inner := B < goruntime.GOMAXPROCS(0) && V >= 2*weightChunk
	forRows(B, V, &fbPool, func(r int, s *fbScratch) {
		tok, ok := argpartitionRow(logits[r*V:(r+1)*V], uint32(r), rowParams(params, r), key, s, inner)
		tokens[r] = tok
		if !ok {
			bad.add(r)
		}
	})
	return bad.err(entry)
}

func argpartitionRow(row []float32, r uint32, p Params, key Key, s *fbScratch, inner bool) (uint32, bool) {
	tok, ok, done, M := rowPrelude(row, p.Temperature)
	if done {
		return tok, ok
	}
	V := len(row)
	s.size(V)
	x, e, keep := s.x, s.e, s.keep
	kOn, pOn, mOn := p.TopKActive(V), p.TopPActive(), p.MinPActive()
	// Only top-p needs every token's weight (its mass is relative to the
	// whole row); the other filters decide on x, and the draw weighs only
	// the kept tokens.
	var S float64
	var finite int
	if pOn {
		S, finite = rowWeights(row, M, x, e, keep, inner)
	} else {
		finite = rowOffsets(row, M, x, keep)
	}
	if mOn {
		// P_i >= min_p * P_max  <=>  exp(x_i) >= min_p, since x_max = 0.
		// Far below log(min_p) the answer is no without an exp.
		mp := float64(p.MinP)
		cut := math.Log(mp) - 1e-9
		for i := range x {
			if !keep[i] {
				continue
			}
			if x[i] < cut {
				keep[i] = false
				continue
			}
			ei := e[i]
			if !pOn {
				ei = math.Exp(x[i])
			}
			if !(ei >= mp) {
				keep[i] = false
			}
		}
	}
	if kOn && finite > p.TopK {
		vals := s.w[:0]
		for i := range x {
			if !math.IsInf(x[i], -1) {
				vals = append(vals, x[i])
			}
		}
		kth := selectKth(vals, len(vals)-p.TopK) // the k-th largest
		for i := range x {
			if keep[i] && x[i] < kth {
				keep[i] = false
			}
		}
	}
	if pOn {
		limit := float64(p.TopP) * S
		var tau float64
		if kOn || mOn {
			tau = topPSorted(x, e, keep, s.idx, limit)
		} else {
			tau = topPHeap(x, e, s.idx, limit)
		}
		for i := range x {
			if keep[i] && x[i] < tau {
				keep[i] = false
			}
		}
	}
	// The draw weights: the tempered row over the kept set (drawIndex reads
	// w only where keep is set).
	w := s.w
	invT := 1 / float64(p.Temperature)
	total := 0.0
	for i := range x {
		if keep[i] {
			switch {
			case pOn && p.Temperature == 1:
				w[i] = e[i]
			default:
				w[i] = math.Exp(x[i] * invT)
			}
			total += w[i]
		}
	}
	return drawIndex(w, keep, total, float64(fallbackUniform(key, r))), true
}

// rowOffsets writes x = logit - max (-inf for -inf and NaN) and keep = x is
// finite, and returns the number of finite tokens.
func rowOffsets(row []float32, M float32, x []float64, keep []bool) int {
	finite := 0
	for i, l := range row {
		x[i] = float64(clean(l)) - float64(M) // <= 0; -inf for -inf and NaN
		keep[i] = !math.IsInf(x[i], -1)
		if keep[i] {
			finite++
		}
	}
	return finite
}

// weightChunk is the span rowWeights sums as one partial: partials are added
// in chunk order, so S does not depend on how many goroutines computed them.
const weightChunk = 8192

// rowWeights is rowOffsets plus e = exp(x) (P_i * S, with P_max * S = 1),
// and returns S = sum(e) as well. With inner set (a call with fewer rows
// than cores) the chunks are spread over GOMAXPROCS goroutines.
func rowWeights(row []float32, M float32, x, e []float64, keep []bool, inner bool) (S float64, finite int) {
	V := len(row)
	chunks := (V + weightChunk - 1) / weightChunk
	var partS [64]float64
	var partN [64]int
	if chunks > len(partS) {
		// Rows past 512K tokens: one pass, still in chunk order.
		inner = false
	}
	do := func(c int) (float64, int) {
		lo, hi := c*weightChunk, min(V, (c+1)*weightChunk)
		var sum float64
		n := 0
		for i := lo; i < hi; i++ {
			xi := float64(clean(row[i])) - float64(M)
			x[i] = xi
			ei := math.Exp(xi)
			e[i] = ei
			sum += ei
			keep[i] = !math.IsInf(xi, -1)
			if keep[i] {
				n++
			}
		}
		return sum, n
	}
	workers := min(goruntime.GOMAXPROCS(0), chunks)
	if !inner || workers <= 1 {
		for c := range chunks {
			sum, n := do(c)
			S += sum
			finite += n
		}
		return S, finite
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				partS[c], partN[c] = do(c)
			}
		}()
	}
	wg.Wait()
	for c := range chunks {
		S += partS[c]
		finite += partN[c]
	}
	return S, finite
}

// topPSorted: the kept candidates are an upper set (top-k and min-p keep
// everything more probable than anything they keep), so the mass strictly
// above any candidate comes from candidates only. Sort them by logit,
// descending, and return the smallest logit whose group still has mass
// strictly above below limit.
func topPSorted(x, e []float64, keep []bool, idx []int32, limit float64) float64 {
	idx = idx[:0]
	for i := range x {
		if keep[i] {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int {
		switch {
		case x[a] > x[b]:
			return -1
		case x[a] < x[b]:
			return 1
		}
		return 0
	})
	above, tau := 0.0, 0.0
	for i := 0; i < len(idx); {
		v := x[idx[i]]
		if !(above < limit) {
			break
		}
		tau = v
		for ; i < len(idx) && x[idx[i]] == v; i++ {
			above += e[idx[i]]
		}
	}
	return tau
}

// topPHeap does the same over every finite token without sorting them all:
// a max-heap is built in O(V) and popped only until the mass above reaches
// limit.
func topPHeap(x, e []float64, idx []int32, limit float64) float64 {
	h := idx[:0]
	for i := range x {
		if !math.IsInf(x[i], -1) {
			h = append(h, int32(i))
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, x, i)
	}
	above, tau := 0.0, 0.0
	for len(h) > 0 {
		v := x[h[0]]
		if !(above < limit) {
			break
		}
		tau = v
		for len(h) > 0 && x[h[0]] == v {
			above += e[h[0]]
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
			siftDown(h, x, 0)
		}
	}
	return tau
}

func siftDown(h []int32, x []float64, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && x[h[r]] > x[h[l]] {
			c = r
		}
		if !(x[h[c]] > x[h[i]]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// selectKth returns the value of rank n (0-based, ascending) of v, reordering
// v (Hoare quickselect, median-of-three pivot).
func selectKth(v []float64, n int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return v[n]
		}
	}
	return v[n]
}

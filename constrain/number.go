package constrain

import (
	"math/big"
	"strings"
)

// A bounded number is written without an exponent, so the values a prefix
// can still become are a union of intervals: "12" can become [12, 13)
// (12 and 12.x), [120, 130), [1200, 1300) and so on; "12.3" [12.3, 12.4).
// viable keeps a prefix only if one of them meets the bounds, exactly (in
// rationals), so a bounded number never reaches a dead end.

// interval is [a, b) of magnitudes; b nil is unbounded.
type interval struct{ a, b *big.Rat }

// viable reports whether the number text b (in state st) can still become
// a value within n's bounds.
func viable(n *node, b []byte, st uint8) bool {
	neg := b[0] == '-'
	t := string(b)
	if neg {
		t = t[1:]
	}
	ip, fp, _ := strings.Cut(t, ".")
	var ivs []interval
	switch st {
	case nMinus:
		ivs = []interval{{new(big.Rat), nil}}
	case nZero:
		ivs = []interval{{new(big.Rat), big.NewRat(1, 1)}}
	case nInt:
		d, _ := new(big.Rat).SetString(ip)
		p := big.NewRat(1, 1)
		ten := big.NewRat(10, 1)
		// The intervals only grow: past the bound on the far side of
		// zero, none meets the bounds.
		far := n.bounds.hi
		if neg {
			far = n.bounds.lo
		}
		for j := 0; j <= maxNumber-len(b); j++ {
			a := new(big.Rat).Mul(d, p)
			e := new(big.Rat).Add(d, big.NewRat(1, 1))
			iv := interval{a, e.Mul(e, p)}
			if meets(n.bounds, iv, neg, n.integer) {
				return true
			}
			if far != nil && a.Cmp(new(big.Rat).Abs(far)) > 0 {
				return false
			}
			p = new(big.Rat).Mul(p, ten)
		}
		return false
	case nDot:
		d, _ := new(big.Rat).SetString(ip)
		ivs = []interval{{d, new(big.Rat).Add(d, big.NewRat(1, 1))}}
	case nFrac:
		a, _ := new(big.Rat).SetString(ip + "." + fp)
		unit := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fp))), nil))
		ivs = []interval{{a, new(big.Rat).Add(a, unit)}}
	default:
		return true
	}
	for _, iv := range ivs {
		if meets(n.bounds, iv, neg, n.integer) {
			return true
		}
	}
	return false
}

// meets reports whether the values of the magnitudes iv (negated when neg)
// meet the bounds, among integers when integer.
func meets(bd *bounds, iv interval, neg, integer bool) bool {
	// The values as lower and upper ends: [a, b) or, negated, (-b, -a].
	lo, loIn, hi, hiIn := iv.a, true, iv.b, false
	if neg {
		lo, loIn, hi, hiIn = nil, false, new(big.Rat).Neg(iv.a), true
		if iv.b != nil {
			lo = new(big.Rat).Neg(iv.b)
		}
	}
	lo, loIn = tighter(lo, loIn, bd.lo, !bd.loExcl, 1)
	hi, hiIn = tighter(hi, hiIn, bd.hi, !bd.hiExcl, -1)
	if lo == nil || hi == nil {
		return true
	}
	if integer {
		min := ceil(lo)
		if !loIn && lo.IsInt() {
			min.Add(min, big.NewInt(1))
		}
		max := floor(hi)
		if !hiIn && hi.IsInt() {
			max.Sub(max, big.NewInt(1))
		}
		return min.Cmp(max) <= 0
	}
	c := lo.Cmp(hi)
	return c < 0 || c == 0 && loIn && hiIn
}

// tighter is the tighter of two lower ends (dir 1) or upper ends (dir -1).
func tighter(x *big.Rat, xIn bool, y *big.Rat, yIn bool, dir int) (*big.Rat, bool) {
	switch {
	case y == nil:
		return x, xIn
	case x == nil:
		return y, yIn
	}
	c := y.Cmp(x) * dir
	switch {
	case c > 0:
		return y, yIn
	case c == 0:
		return x, xIn && yIn
	}
	return x, xIn
}

func floor(r *big.Rat) *big.Int {
	return new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive divisor
}

func ceil(r *big.Rat) *big.Int {
	f := floor(r)
	if !r.IsInt() {
		f.Add(f, big.NewInt(1))
	}
	return f
}

// inBounds reports whether the complete number text b is within bd.
func inBounds(bd *bounds, b []byte) bool {
	v, ok := new(big.Rat).SetString(string(b))
	if !ok {
		return false
	}
	if bd.lo != nil {
		if c := v.Cmp(bd.lo); c < 0 || c == 0 && bd.loExcl {
			return false
		}
	}
	if bd.hi != nil {
		if c := v.Cmp(bd.hi); c > 0 || c == 0 && bd.hiExcl {
			return false
		}
	}
	return true
}

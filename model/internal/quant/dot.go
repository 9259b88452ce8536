package quant

import "math"

// DotRow returns the dot product of x with one row of type t (len(x)
// elements, stored in row), accumulated in float32 without writing the row
// out (the generic kernels sum each block's codes against x and apply the
// block's scales once; the assembly ones may form each weight in a
// register first). Its rounding differs from a product with the
// DequantizeRow values by float32 accumulation error. It returns NaN when t is
// unknown, len(x) is not a whole number of blocks, or len(row) is not
// RowBytes(t, len(x)): callers check shapes once, at load.
func DotRow(t Type, row []byte, x []float32) float32 {
	l, ok := lookup(t)
	n := len(x)
	if !ok || n&(1<<l.shift-1) != 0 || len(row) != n>>l.shift*l.bytes {
		return float32(math.NaN())
	}
	if n == 0 {
		return 0
	}
	return kern.dot[t](row, x)
}

// kernelSet is one selectable set of per-type row products and row
// decoders; each entry may assume a validated row (whole blocks, matching
// sizes, at least one block).
type kernelSet struct {
	dot     [BF16 + 1]func(row []byte, x []float32) float32
	dequant [BF16 + 1]func(src []byte, dst []float32)
}

var generic = kernelSet{dot: [BF16 + 1]func([]byte, []float32) float32{
	F32:  dotF32,
	F16:  dotF16,
	BF16: dotBF16,
	Q4_0: dotQ4_0,
	Q4_1: dotQ4_1,
	Q5_0: dotQ5_0,
	Q5_1: dotQ5_1,
	Q8_0: dotQ8_0,
	Q4_K: dotQ4_K,
	Q5_K: dotQ5_K,
	Q6_K: dotQ6_K,
}, dequant: [BF16 + 1]func([]byte, []float32){
	F32:  dequantF32,
	F16:  dequantF16,
	BF16: dequantBF16,
	Q4_0: blockwise(Q4_0, decodeQ4_0),
	Q4_1: blockwise(Q4_1, decodeQ4_1),
	Q5_0: blockwise(Q5_0, decodeQ5_0),
	Q5_1: blockwise(Q5_1, decodeQ5_1),
	Q8_0: blockwise(Q8_0, decodeQ8_0),
	Q4_K: blockwise(Q4_K, decodeQ4_K),
	Q5_K: blockwise(Q5_K, decodeQ5_K),
	Q6_K: blockwise(Q6_K, decodeQ6_K),
}}

// kern is the active set; variants holds every set this CPU can run.
var (
	kern     = generic
	kernName = "generic"
	variants = map[string]kernelSet{"generic": generic}
)

func dotF32(row []byte, x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		b := row[4*i : 4*i+16 : 4*i+16]
		s0 += x[i] * math.Float32frombits(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
		s1 += x[i+1] * math.Float32frombits(uint32(b[4])|uint32(b[5])<<8|uint32(b[6])<<16|uint32(b[7])<<24)
		s2 += x[i+2] * math.Float32frombits(uint32(b[8])|uint32(b[9])<<8|uint32(b[10])<<16|uint32(b[11])<<24)
		s3 += x[i+3] * math.Float32frombits(uint32(b[12])|uint32(b[13])<<8|uint32(b[14])<<16|uint32(b[15])<<24)
	}
	for ; i < len(x); i++ {
		b := row[4*i:]
		s0 += x[i] * math.Float32frombits(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
	}
	return (s0 + s1) + (s2 + s3)
}

func dotF16(row []byte, x []float32) float32 {
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += x[i] * f16at(row[2*i:])
		s1 += x[i+1] * f16at(row[2*i+2:])
	}
	if i < len(x) {
		s0 += x[i] * f16at(row[2*i:])
	}
	return s0 + s1
}

func dotBF16(row []byte, x []float32) float32 {
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(x); i += 2 {
		s0 += x[i] * bf16(le16(row[2*i:]))
		s1 += x[i+1] * bf16(le16(row[2*i+2:]))
	}
	if i < len(x) {
		s0 += x[i] * bf16(le16(row[2*i:]))
	}
	return s0 + s1
}

// nibbleSums returns sum(x[j]*lo(q[j])) and sum(x[j+len(q)]*hi(q[j])) for
// 16 or 32 bytes of packed nibbles, and the sums of those two runs of x.
func nibbleSums(q []byte, x []float32) (slo, shi, xlo, xhi float32) {
	n := len(q)
	x = x[:2*n]
	for j, b := range q {
		a, c := x[j], x[j+n]
		slo += a * float32(b&0xf)
		shi += c * float32(b>>4)
		xlo += a
		xhi += c
	}
	return
}

func dotQ4_0(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[18*b : 18*b+18]
		slo, shi, xlo, xhi := nibbleSums(blk[2:18], x[32*b:32*b+32])
		s += f16at(blk) * ((slo + shi) - 8*(xlo+xhi))
	}
	return s
}

func dotQ4_1(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[20*b : 20*b+20]
		slo, shi, xlo, xhi := nibbleSums(blk[4:20], x[32*b:32*b+32])
		s += f16at(blk)*(slo+shi) + f16at(blk[2:])*(xlo+xhi)
	}
	return s
}

// q5Sums is nibbleSums for a Q5_0/Q5_1 block's 16 nibble bytes and its
// fifth bits qh: sum(x[j]*q(j)) and sum(x[j+16]*q(j+16)), and the sums of
// those two runs of x.
func q5Sums(q []byte, qh uint32, x []float32) (slo, shi, xlo, xhi float32) {
	x = x[:32]
	for j, b := range q[:16] {
		a, c := x[j], x[j+16]
		slo += a * float32(uint32(b&0xf)|(qh>>j&1)<<4)
		shi += c * float32(uint32(b>>4)|(qh>>(j+16)&1)<<4)
		xlo += a
		xhi += c
	}
	return
}

func dotQ5_0(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[22*b : 22*b+22]
		slo, shi, xlo, xhi := q5Sums(blk[6:22], le32(blk[2:]), x[32*b:32*b+32])
		s += f16at(blk) * ((slo + shi) - 16*(xlo+xhi))
	}
	return s
}

func dotQ5_1(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[24*b : 24*b+24]
		slo, shi, xlo, xhi := q5Sums(blk[8:24], le32(blk[4:]), x[32*b:32*b+32])
		s += f16at(blk)*(slo+shi) + f16at(blk[2:])*(xlo+xhi)
	}
	return s
}

func dotQ8_0(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[34*b : 34*b+34]
		xs := x[32*b : 32*b+32]
		var a0, a1 float32
		for j := 0; j < 32; j += 2 {
			a0 += xs[j] * float32(int8(blk[2+j]))
			a1 += xs[j+1] * float32(int8(blk[3+j]))
		}
		s += f16at(blk) * (a0 + a1)
	}
	return s
}

func dotQ4_K(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/qk; b++ {
		blk := row[144*b : 144*b+144]
		d, dmin := f16at(blk), f16at(blk[2:])
		scales := blk[4:16]
		xs := x[qk*b : qk*b+qk]
		var sq, sm float32 // sum of sc*(x·q) and of m*sum(x) over the sub-blocks
		for i := range 4 {
			sc1, m1 := scaleMin(2*i, scales)
			sc2, m2 := scaleMin(2*i+1, scales)
			slo, shi, xlo, xhi := nibbleSums(blk[16+32*i:48+32*i], xs[64*i:64*i+64])
			sq += float32(sc1)*slo + float32(sc2)*shi
			sm += float32(m1)*xlo + float32(m2)*xhi
		}
		s += d*sq - dmin*sm
	}
	return s
}

func dotQ5_K(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/qk; b++ {
		blk := row[176*b : 176*b+176]
		d, dmin := f16at(blk), f16at(blk[2:])
		scales := blk[4:16]
		qh := blk[16:48]
		xs := x[qk*b : qk*b+qk]
		var sq, sm float32
		for i := range 4 {
			sc1, m1 := scaleMin(2*i, scales)
			sc2, m2 := scaleMin(2*i+1, scales)
			q := blk[48+32*i : 80+32*i]
			x1, x2 := xs[64*i:64*i+32], xs[64*i+32:64*i+64]
			var slo, shi, xlo, xhi float32
			for l, c := range q {
				h := qh[l] >> (2 * i)
				slo += x1[l] * float32(c&0xf|(h&1)<<4)
				shi += x2[l] * float32(c>>4|(h&2)<<3)
				xlo += x1[l]
				xhi += x2[l]
			}
			sq += float32(sc1)*slo + float32(sc2)*shi
			sm += float32(m1)*xlo + float32(m2)*xhi
		}
		s += d*sq - dmin*sm
	}
	return s
}

func dotQ6_K(row []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/qk; b++ {
		blk := row[210*b : 210*b+210]
		sc := blk[192:208]
		xs := x[qk*b : qk*b+qk]
		var acc float32
		for h := range 2 {
			lo := blk[64*h : 64*h+64]
			hi := blk[128+32*h : 160+32*h]
			xh := xs[128*h : 128*h+128]
			// Sixteen-element groups: g is 0 or 1 (l < 16 or not).
			for g := range 2 {
				var a1, a2, a3, a4 float32
				for l := 16 * g; l < 16*g+16; l++ {
					a1 += xh[l] * float32(int(lo[l]&0xf|(hi[l]&3)<<4)-32)
					a2 += xh[l+32] * float32(int(lo[l+32]&0xf|(hi[l]>>2&3)<<4)-32)
					a3 += xh[l+64] * float32(int(lo[l]>>4|(hi[l]>>4&3)<<4)-32)
					a4 += xh[l+96] * float32(int(lo[l+32]>>4|(hi[l]>>6)<<4)-32)
				}
				s := sc[8*h+g:]
				acc += float32(int8(s[0]))*a1 + float32(int8(s[2]))*a2 + float32(int8(s[4]))*a3 + float32(int8(s[6]))*a4
			}
		}
		s += f16at(blk[208:]) * acc
	}
	return s
}

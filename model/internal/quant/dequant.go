package quant

import (
	"fmt"
	"math"
)

// DequantizeRow widens one row of type t into dst: src must be exactly
// RowBytes(t, len(dst)) bytes. The values are bit-identical to ggml's
// dequantize_row_* and to the gguf Python package's dequantize.
func DequantizeRow(t Type, src []byte, dst []float32) error {
	rb, err := RowBytes(t, len(dst))
	if err != nil {
		return err
	}
	if len(src) != rb {
		return fmt.Errorf("%w: %d bytes for %d elements of %v (want %d)", ErrSize, len(src), len(dst), t, rb)
	}
	if len(dst) > 0 {
		kern.dequant[t](src, dst)
	}
	return nil
}

func dequantF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(src[4*i]) | uint32(src[4*i+1])<<8 | uint32(src[4*i+2])<<16 | uint32(src[4*i+3])<<24)
	}
}

func dequantF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = f16at(src[2*i:])
	}
}

func dequantBF16(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = bf16(le16(src[2*i:]))
	}
}

// blockwise makes a row decoder from a block decoder of type t.
func blockwise(t Type, dec func(blk []byte, y []float32)) func(src []byte, dst []float32) {
	n, bs := BlockSize(t)
	return func(src []byte, dst []float32) {
		for b := 0; b < len(dst)/n; b++ {
			dec(src[b*bs:(b+1)*bs], dst[b*n:(b+1)*n])
		}
	}
}

// In the decoders an explicit float32(...) around a product forces it to be
// rounded before the add: without it the compiler may fuse x*y+z into one
// FMA (it does on arm64), which rounds once and differs from the reference.

// Q4_0: d (f16), then 16 bytes; element j is the low nibble of byte j and
// element j+16 the high nibble; value d*(q-8).
func decodeQ4_0(blk []byte, y []float32) {
	d := f16at(blk)
	qs := blk[2:18]
	y = y[:32]
	for j, b := range qs {
		y[j] = d * float32(int(b&0xf)-8)
		y[j+16] = d * float32(int(b>>4)-8)
	}
}

// Q4_1: d, m (f16), nibbles as Q4_0; value d*q + m.
func decodeQ4_1(blk []byte, y []float32) {
	d, m := f16at(blk), f16at(blk[2:])
	qs := blk[4:20]
	y = y[:32]
	for j, b := range qs {
		y[j] = float32(d*float32(b&0xf)) + m
		y[j+16] = float32(d*float32(b>>4)) + m
	}
}

// Q5_0: d (f16), qh (32 bits, little-endian), 16 bytes of nibbles; element
// j (< 16) is the low nibble of byte j with bit j of qh as its fifth bit,
// element j+16 the high nibble with bit j+16; value d*(q-16).
func decodeQ5_0(blk []byte, y []float32) {
	d := f16at(blk)
	qh := le32(blk[2:])
	qs := blk[6:22]
	y = y[:32]
	for j, b := range qs {
		h0, h1 := qh>>j&1, qh>>(j+16)&1
		y[j] = float32(int(uint32(b&0xf)|h0<<4)-16) * d
		y[j+16] = float32(int(uint32(b>>4)|h1<<4)-16) * d
	}
}

// Q5_1: d, m (f16), then qh and nibbles as Q5_0; value d*q + m.
func decodeQ5_1(blk []byte, y []float32) {
	d, m := f16at(blk), f16at(blk[2:])
	qh := le32(blk[4:])
	qs := blk[8:24]
	y = y[:32]
	for j, b := range qs {
		h0, h1 := qh>>j&1, qh>>(j+16)&1
		y[j] = float32(float32(uint32(b&0xf)|h0<<4)*d) + m
		y[j+16] = float32(float32(uint32(b>>4)|h1<<4)*d) + m
	}
}

// Q8_0: d (f16), 32 int8; value d*q.
func decodeQ8_0(blk []byte, y []float32) {
	d := f16at(blk)
	qs := blk[2:34]
	y = y[:32]
	for j, b := range qs {
		y[j] = float32(int8(b)) * d
	}
}

// scaleMin unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 packed bytes of a Q4_K/Q5_K block (ggml's get_scale_min_k4): bytes 0-3
// hold scales 0-3 and the top bits of scales 4-7, bytes 4-7 the mins
// likewise, bytes 8-11 the low four bits of scales and mins 4-7.
func scaleMin(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// Q4_K: d, dmin (f16), 12 scale bytes, 128 bytes of nibbles. Each 64
// elements share 32 bytes: the low nibbles are sub-block 2i, the high
// nibbles sub-block 2i+1. Value (d*sc)*q - dmin*m.
func decodeQ4_K(blk []byte, y []float32) {
	d, dmin := f16at(blk), f16at(blk[2:])
	scales := blk[4:16]
	qs := blk[16:144]
	y = y[:qk]
	for i := range 4 {
		sc1, m1 := scaleMin(2*i, scales)
		sc2, m2 := scaleMin(2*i+1, scales)
		d1, dm1 := d*float32(sc1), dmin*float32(m1)
		d2, dm2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*i : 32*i+32]
		out := y[64*i : 64*i+64]
		for l, b := range q {
			out[l] = float32(d1*float32(b&0xf)) - dm1
			out[l+32] = float32(d2*float32(b>>4)) - dm2
		}
	}
}

// Q5_K: as Q4_K with 32 bytes of high bits before the nibbles: bit s of
// qh[l] is the fifth bit of element l of sub-block s.
func decodeQ5_K(blk []byte, y []float32) {
	d, dmin := f16at(blk), f16at(blk[2:])
	scales := blk[4:16]
	qh := blk[16:48]
	qs := blk[48:176]
	y = y[:qk]
	for i := range 4 {
		sc1, m1 := scaleMin(2*i, scales)
		sc2, m2 := scaleMin(2*i+1, scales)
		d1, dm1 := d*float32(sc1), dmin*float32(m1)
		d2, dm2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*i : 32*i+32]
		out := y[64*i : 64*i+64]
		for l, b := range q {
			h := qh[l] >> (2 * i)
			out[l] = float32(d1*float32(b&0xf|(h&1)<<4)) - dm1
			out[l+32] = float32(d2*float32(b>>4|(h&2)<<3)) - dm2
		}
	}
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8
// scales (one per 16 elements), d (f16). Each half of 128 elements uses 64
// low bytes and 32 high bytes; within a half, element 32k+l takes its low
// four bits from byte l (k=0,2) or l+32 (k=1,3), low nibble for k<2, and its
// high two bits from bits 2k of qh[l]. Value (d*sc)*(q-32).
func decodeQ6_K(blk []byte, y []float32) {
	ql := blk[0:128]
	qh := blk[128:192]
	sc := blk[192:208]
	d := f16at(blk[208:])
	y = y[:qk]
	for h := range 2 {
		lo := ql[64*h : 64*h+64]
		hi := qh[32*h : 32*h+32]
		s := sc[8*h : 8*h+8]
		out := y[128*h : 128*h+128]
		for l := range 32 {
			is := l / 16
			q1 := int(lo[l]&0xf|(hi[l]&3)<<4) - 32
			q2 := int(lo[l+32]&0xf|(hi[l]>>2&3)<<4) - 32
			q3 := int(lo[l]>>4|(hi[l]>>4&3)<<4) - 32
			q4 := int(lo[l+32]>>4|(hi[l]>>6)<<4) - 32
			out[l] = d * float32(int8(s[is])) * float32(q1)
			out[l+32] = d * float32(int8(s[is+2])) * float32(q2)
			out[l+64] = d * float32(int8(s[is+4])) * float32(q3)
			out[l+96] = d * float32(int8(s[is+6])) * float32(q4)
		}
	}
}

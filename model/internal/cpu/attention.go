package cpu

// Scores writes dst[j] = scale * q · k[j*stride : j*stride+len(q)] for
// j < len(dst): one query head's scores against keys stored stride
// values apart (a KV cache's rows, at the head's offset). Four keys share
// each load of q (dot4).
func Scores(dst, q, k []float32, stride int, scale float32) {
	hd, n := len(q), len(dst)
	if n == 0 {
		return
	}
	_ = k[(n-1)*stride+hd-1]
	j := 0
	var o [4]float32
	for ; j+4 <= n; j += 4 {
		dot4(q, k[j*stride:(j+3)*stride+hd], stride, &o)
		dst[j], dst[j+1], dst[j+2], dst[j+3] = o[0]*scale, o[1]*scale, o[2]*scale, o[3]*scale
	}
	for ; j < n; j++ {
		dst[j] = dot(q, k[j*stride:j*stride+hd]) * scale
	}
}

// WeightedRows writes o[c] = sum over j < len(p) of p[j] * v[j*stride+c]
// for c < len(o): attention's sum of value rows weighted by the softmax,
// summed key by key in order.
func WeightedRows(o, p, v []float32, stride int) {
	if len(p) == 0 {
		clear(o)
		return
	}
	_ = v[(len(p)-1)*stride+len(o)-1]
	weightedRows(o, p, v, stride)
}

// weightedRows is WeightedRows's loop: the AVX2 one where dot_amd64.go
// finds it.
var weightedRows = weightedRowsGeneric

func weightedRowsGeneric(o, p, v []float32, stride int) {
	weightedColumns(o, p, v, stride, 0)
}

// weightedColumns is WeightedRows for columns from c0 on.
func weightedColumns(o, p, v []float32, stride, c0 int) {
	for c := c0; c < len(o); c++ {
		var s float32
		for j, pj := range p {
			s += pj * v[j*stride+c]
		}
		o[c] = s
	}
}

package safetensors

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzHeader proves that any byte string either fails to open with an *Error
// or opens into a file whose every tensor can be read in full: the header
// validation leaves no way to read out of range or panic.
func FuzzHeader(f *testing.F) {
	var buf bytes.Buffer
	b, _ := EncodeFloat32(BF16, []float32{1, 2, 3, 4})
	_ = Write(&buf, []Tensor{{Name: "w", DType: BF16, Shape: []int{2, 2}, Data: b}, {Name: "s", DType: F32, Data: make([]byte, 4)}}, map[string]string{"a": "b"})
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add(rawFile(`{"w":{"dtype":"F16","shape":[0],"data_offsets":[0,0]}}`, nil))
	f.Add(rawFile(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := FromBytes("fuzz", data)
		if err != nil {
			var se *Error
			require.ErrorAs(t, err, &se)
			return
		}
		for _, n := range file.Names() {
			info, ok := file.Info(n)
			require.True(t, ok)
			require.NoError(t, file.ReadRaw(n, make([]byte, info.Size)))
			if info.DType == F32 || info.DType == F16 || info.DType == BF16 {
				require.NoError(t, file.ReadFloat32(n, make([]float32, info.NumElements())))
			}
		}
	})
}

package codeobj

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeMsgpackFormats decodes one example of every format family the
// MessagePack specification defines (except ext), with the byte layouts
// taken from the specification, and checks the Go value.
func TestDecodeMsgpackFormats(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want any
	}{
		{"positive fixint", []byte{0x05}, int64(5)},
		{"positive fixint max", []byte{0x7f}, int64(127)},
		{"negative fixint", []byte{0xff}, int64(-1)},
		{"negative fixint min", []byte{0xe0}, int64(-32)},
		{"nil", []byte{0xc0}, nil},
		{"false", []byte{0xc2}, false},
		{"true", []byte{0xc3}, true},
		{"uint8", []byte{0xcc, 0xfe}, int64(254)},
		{"uint16", []byte{0xcd, 0x01, 0x00}, int64(256)},
		{"uint32", []byte{0xce, 0x00, 0x01, 0x00, 0x00}, int64(65536)},
		{"uint64 small", []byte{0xcf, 0, 0, 0, 1, 0, 0, 0, 0}, int64(1 << 32)},
		{"uint64 above int64", []byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint64(math.MaxUint64)},
		{"int8", []byte{0xd0, 0x80}, int64(-128)},
		{"int16", []byte{0xd1, 0xff, 0x00}, int64(-256)},
		{"int32", []byte{0xd2, 0x80, 0, 0, 0}, int64(math.MinInt32)},
		{"int64", []byte{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, int64(math.MinInt64)},
		{"float32", []byte{0xca, 0x3f, 0xc0, 0, 0}, 1.5},
		{"float64", []byte{0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}, math.Pi},
		{"fixstr", []byte{0xa3, 'a', 'b', 'c'}, "abc"},
		{"empty fixstr", []byte{0xa0}, ""},
		{"str8", []byte{0xd9, 0x02, 'h', 'i'}, "hi"},
		{"str16", []byte{0xda, 0x00, 0x01, 'x'}, "x"},
		{"str32", []byte{0xdb, 0, 0, 0, 0x01, 'y'}, "y"},
		{"bin8", []byte{0xc4, 0x02, 0xde, 0xad}, []byte{0xde, 0xad}},
		{"bin16", []byte{0xc5, 0x00, 0x01, 0x07}, []byte{0x07}},
		{"bin32", []byte{0xc6, 0, 0, 0, 0x01, 0x08}, []byte{0x08}},
		{"fixarray", []byte{0x92, 0x01, 0x02}, []any{int64(1), int64(2)}},
		{"array16", []byte{0xdc, 0x00, 0x01, 0xc3}, []any{true}},
		{"array32", []byte{0xdd, 0, 0, 0, 0x01, 0xc2}, []any{false}},
		{"fixmap", []byte{0x81, 0xa1, 'k', 0x07}, map[string]any{"k": int64(7)}},
		{"map16", []byte{0xde, 0x00, 0x01, 0xa1, 'a', 0xc0}, map[string]any{"a": nil}},
		{"map32", []byte{0xdf, 0, 0, 0, 0x01, 0xa1, 'b', 0x90}, map[string]any{"b": []any{}}},
		{"nested", []byte{0x81, 0xa1, 'm', 0x91, 0x81, 0xa1, 'n', 0x01},
			map[string]any{"m": []any{map[string]any{"n": int64(1)}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeMsgpack(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestDecodeMsgpackRejects proves each kind of malformed document is an
// error (a *MsgpackError), not a panic, a partial value or a huge
// allocation.
func TestDecodeMsgpackRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"never-used type byte", []byte{0xc1}},
		{"ext types are unsupported", []byte{0xd4, 0x01, 0x00}},
		{"truncated uint32", []byte{0xce, 0x00, 0x01}},
		{"truncated fixstr", []byte{0xa5, 'a'}},
		{"str32 length beyond input", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}},
		{"bin32 length beyond input", []byte{0xc6, 0x7f, 0xff, 0xff, 0xff}},
		{"array32 count beyond input", []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"map32 count beyond input", []byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k', 0x01}},
		{"map with integer key", []byte{0x81, 0x01, 0x02}},
		{"duplicate map key", []byte{0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02}},
		{"trailing bytes", []byte{0x01, 0x02}},
		{"array missing elements", []byte{0x93, 0x01}},
		{"map missing value", []byte{0x81, 0xa1, 'k'}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := decodeMsgpack(tc.in)
			require.Error(t, err)
			require.Nil(t, v)
			var me *MsgpackError
			require.True(t, errors.As(err, &me), "error %v is not a *MsgpackError", err)
		})
	}
}

// TestDecodeMsgpackDepthLimit proves that deeply nested arrays are refused
// at the limit instead of recursing without bound.
func TestDecodeMsgpackDepthLimit(t *testing.T) {
	ok := make([]byte, maxMsgpackDepth+1)
	for i := range ok[:maxMsgpackDepth] {
		ok[i] = 0x91
	}
	ok[maxMsgpackDepth] = 0x00
	_, err := decodeMsgpack(ok)
	require.NoError(t, err, "nesting at the limit is accepted")

	deep := make([]byte, 10000)
	for i := range deep {
		deep[i] = 0x91 // fixarray of one element, nested
	}
	_, err = decodeMsgpack(deep)
	var me *MsgpackError
	require.ErrorAs(t, err, &me)
	require.Contains(t, me.Reason, "nested deeper")
}

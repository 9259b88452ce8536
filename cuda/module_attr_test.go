package cuda

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/dynlib"
)

// TestSetAttributeCallsTheDriverAndTypesItsStatus proves SetAttribute hands
// cuFuncSetAttribute the function, the attribute and the value in cuda.h's
// order, returns nil on CUDA_SUCCESS and an *Error naming the call with the
// driver's code otherwise, and refuses a value that does not fit a C int
// without calling the driver.
func TestSetAttributeCallsTheDriverAndTypesItsStatus(t *testing.T) {
	type call struct {
		f Function
		a FuncAttribute
		v int32
	}
	var calls []call
	answer := Success
	fake := &driver{lib: &dynlib.Library{Path: "libcuda.fake"}}
	fake.cuFuncSetAttribute = func(f Function, a FuncAttribute, v int32) Code {
		calls = append(calls, call{f, a, v})
		return answer
	}
	saved := current.Swap(fake)
	defer current.Store(saved)

	require.NoError(t, Function(0x1234).SetAttribute(FuncMaxDynamicSharedSizeBytes, 100<<10))
	require.Equal(t, []call{{0x1234, FuncMaxDynamicSharedSizeBytes, 100 << 10}}, calls)

	answer = ErrInvalidValue
	err := Function(0x1234).SetAttribute(FuncMaxDynamicSharedSizeBytes, 300<<10)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuFuncSetAttribute", e.Call)
	require.ErrorIs(t, err, ErrInvalidValue)
	require.Len(t, calls, 2)

	err = Function(0x1234).SetAttribute(FuncMaxDynamicSharedSizeBytes, math.MaxInt32+1)
	require.ErrorIs(t, err, ErrInvalidValue)
	require.Len(t, calls, 2, "a value outside C's int never reaches the driver")
}

package runtime

import (
	"encoding/binary"
	"fmt"
	"math"
)

// argSize is the byte size of a launch argument, or an error for a type the
// runtime does not pass (int and uint are refused: their size is the host's,
// not the kernel's).
func argSize(a any) (int, bool, error) {
	switch a.(type) {
	case *Buffer, DevicePtr:
		return 8, true, nil
	case int8, uint8, bool:
		return 1, false, nil
	case int16, uint16:
		return 2, false, nil
	case int32, uint32, float32:
		return 4, false, nil
	case int64, uint64, float64:
		return 8, false, nil
	}
	return 0, false, fmt.Errorf("argument of type %T is not a kernel argument type (use a sized integer, float32/64, DevicePtr or *Buffer)", a)
}

// putArg writes a at dst (len(dst) == its size).
func putArg(dst []byte, a any) {
	le := binary.LittleEndian
	switch v := a.(type) {
	case *Buffer:
		le.PutUint64(dst, uint64(v.ptr))
	case DevicePtr:
		le.PutUint64(dst, uint64(v))
	case int8:
		dst[0] = byte(v)
	case uint8:
		dst[0] = v
	case bool:
		dst[0] = 0
		if v {
			dst[0] = 1
		}
	case int16:
		le.PutUint16(dst, uint16(v))
	case uint16:
		le.PutUint16(dst, v)
	case int32:
		le.PutUint32(dst, uint32(v))
	case uint32:
		le.PutUint32(dst, v)
	case float32:
		le.PutUint32(dst, math.Float32bits(v))
	case int64:
		le.PutUint64(dst, uint64(v))
	case uint64:
		le.PutUint64(dst, v)
	case float64:
		le.PutUint64(dst, math.Float64bits(v))
	}
}

// checkArgs validates args against the kernel's metadata.
func (k *Kernel) checkArgs(d *Device, args []any) error {
	ps := k.spec.Params
	if len(args) != len(ps) {
		return fmt.Errorf("takes %d arguments, got %d", len(ps), len(args))
	}
	for i, a := range args {
		size, isPtr, err := argSize(a)
		if err != nil {
			return fmt.Errorf("argument %d: %v", i, err)
		}
		if size != ps[i].Size {
			return fmt.Errorf("argument %d: the kernel's parameter is %d bytes, got %T (%d bytes)", i, ps[i].Size, a, size)
		}
		if ps[i].Pointer && !isPtr {
			return fmt.Errorf("argument %d: the kernel's parameter is a device pointer, got %T", i, a)
		}
		if b, ok := a.(*Buffer); ok {
			if b == nil {
				return fmt.Errorf("argument %d: nil *Buffer", i)
			}
			if b.dev != d {
				return fmt.Errorf("argument %d: buffer belongs to %s, not %s", i, b.dev.label, d.label)
			}
			if b.freed.Load() {
				return fmt.Errorf("argument %d: buffer used after Free", i)
			}
		}
	}
	return nil
}

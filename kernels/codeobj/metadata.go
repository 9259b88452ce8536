package codeobj

import (
	"fmt"
	"math"
)

// Field names of the code object v3+ metadata (LLVM AMDGPUUsage, "Code
// Object V3 Metadata" and the v4/v5 additions).

// maxSegment bounds sizes read from metadata: far above any real kernel
// (the kernarg segment of a v5 object is a few hundred bytes, LDS at most
// 160 KiB), low enough that no arithmetic on it can overflow an int.
const maxSegment = 1 << 30

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "a bool"
	case int64, uint64:
		return "an integer"
	case float64:
		return "a float"
	case string:
		return "a string"
	case []byte:
		return "binary"
	case []any:
		return "an array"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

// fields reads typed values out of one metadata map, remembering the first
// error so call sites stay flat.
type fields struct {
	m     map[string]any
	where string
	err   error
}

func (r *fields) fail(key, format string, args ...any) {
	if r.err == nil {
		r.err = malformed(r.where+" "+key, format, args...)
	}
}

func (r *fields) intIn(key string, required bool, lo, hi int64) int {
	v, ok := r.m[key]
	if !ok {
		if required {
			r.fail(key, "required field is missing")
		}
		return 0
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case uint64:
		r.fail(key, "value %d is out of range [%d, %d]", x, lo, hi)
		return 0
	default:
		r.fail(key, "is %s, want an integer", typeName(v))
		return 0
	}
	if n < lo || n > hi {
		r.fail(key, "value %d is out of range [%d, %d]", n, lo, hi)
		return 0
	}
	return int(n)
}

func (r *fields) size(key string, required bool) int { return r.intIn(key, required, 0, maxSegment) }

func (r *fields) str(key string, required bool) string {
	v, ok := r.m[key]
	if !ok {
		if required {
			r.fail(key, "required field is missing")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.fail(key, "is %s, want a string", typeName(v))
	}
	return s
}

// flag reads a boolean that LLVM writes either as a bool or as 0/1.
func (r *fields) flag(key string) bool {
	v, ok := r.m[key]
	if !ok {
		return false
	}
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		if x == 0 || x == 1 {
			return x == 1
		}
	}
	r.fail(key, "is %v, want a bool or 0/1", v)
	return false
}

func (r *fields) array(key string, required bool) []any {
	v, ok := r.m[key]
	if !ok {
		if required {
			r.fail(key, "required field is missing")
		}
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.fail(key, "is %s, want an array", typeName(v))
	}
	return a
}

// dims reads an (x, y, z) triple such as .reqd_workgroup_size.
func (r *fields) dims(key string) []int {
	a := r.array(key, false)
	if a == nil || r.err != nil {
		return nil
	}
	if len(a) != 3 {
		r.fail(key, "has %d elements, want 3", len(a))
		return nil
	}
	out := make([]int, 3)
	for i, v := range a {
		n, ok := v.(int64)
		if !ok || n < 1 || n > math.MaxInt32 {
			r.fail(key, "element %d is %v, want a positive integer", i, v)
			return nil
		}
		out[i] = int(n)
	}
	return out
}

func (f *File) readMetadata(root map[string]any) error {
	top := fields{m: root, where: "metadata"}
	f.Target = top.str("amdhsa.target", true)
	ver := top.array("amdhsa.version", true)
	if top.err != nil {
		return top.err
	}
	if len(ver) != 2 {
		return malformed("metadata amdhsa.version", "has %d elements, want [major, minor]", len(ver))
	}
	for i, v := range ver {
		n, ok := v.(int64)
		if !ok || n < 0 || n > math.MaxInt32 {
			return malformed("metadata amdhsa.version", "element %d is %v, want a small non-negative integer", i, v)
		}
		f.MetadataVersion = append(f.MetadataVersion, int(n))
	}
	if f.MetadataVersion[0] != 1 {
		return &FormatError{Where: "metadata amdhsa.version", Kind: ErrUnsupportedVersion,
			Reason: fmt.Sprintf("major version %d, want 1", f.MetadataVersion[0])}
	}
	kernels := top.array("amdhsa.kernels", false)
	if top.err != nil {
		return top.err
	}
	seen := make(map[string]bool, len(kernels))
	f.Kernels = make([]Kernel, 0, len(kernels))
	for i, kv := range kernels {
		km, ok := kv.(map[string]any)
		if !ok {
			return malformed(fmt.Sprintf("metadata amdhsa.kernels[%d]", i), "is %s, want a map", typeName(kv))
		}
		k, err := readKernel(km, i)
		if err != nil {
			return err
		}
		if seen[k.Name] {
			return malformed(fmt.Sprintf("metadata amdhsa.kernels[%d]", i), "kernel name %q appears twice", k.Name)
		}
		seen[k.Name] = true
		f.Kernels = append(f.Kernels, k)
	}
	return nil
}

func readKernel(m map[string]any, index int) (Kernel, error) {
	r := fields{m: m, where: fmt.Sprintf("kernel %d", index)}
	if name, ok := m[".name"].(string); ok {
		r.where = fmt.Sprintf("kernel %q", name)
	}
	k := Kernel{
		Name:                    r.str(".name", true),
		Symbol:                  r.str(".symbol", true),
		KernargSegmentSize:      r.size(".kernarg_segment_size", true),
		KernargSegmentAlign:     r.intIn(".kernarg_segment_align", true, 1, 1<<16),
		GroupSegmentFixedSize:   r.size(".group_segment_fixed_size", true),
		PrivateSegmentFixedSize: r.size(".private_segment_fixed_size", true),
		WavefrontSize:           r.intIn(".wavefront_size", true, 32, 64),
		MaxFlatWorkgroupSize:    r.intIn(".max_flat_workgroup_size", true, 1, 1024),
		SGPRCount:               r.intIn(".sgpr_count", true, 0, 1<<16),
		VGPRCount:               r.intIn(".vgpr_count", true, 0, 1<<16),
		AGPRCount:               r.intIn(".agpr_count", false, 0, 1<<16),
		SGPRSpillCount:          r.intIn(".sgpr_spill_count", false, 0, math.MaxInt32),
		VGPRSpillCount:          r.intIn(".vgpr_spill_count", false, 0, math.MaxInt32),
		UniformWorkGroupSize:    r.flag(".uniform_work_group_size"),
		UsesDynamicStack:        r.flag(".uses_dynamic_stack"),
		ReqdWorkgroupSize:       r.dims(".reqd_workgroup_size"),
		WorkgroupSizeHint:       r.dims(".workgroup_size_hint"),
	}
	args := r.array(".args", false)
	if r.err != nil {
		return Kernel{}, r.err
	}
	if k.Name == "" {
		return Kernel{}, malformed(r.where, "empty kernel name")
	}
	if a := k.KernargSegmentAlign; a&(a-1) != 0 {
		return Kernel{}, malformed(r.where+" .kernarg_segment_align", "%d is not a power of two", a)
	}
	if k.WavefrontSize != 32 && k.WavefrontSize != 64 {
		return Kernel{}, malformed(r.where+" .wavefront_size", "%d, want 32 or 64", k.WavefrontSize)
	}
	k.Args = make([]Arg, 0, len(args))
	for i, av := range args {
		am, ok := av.(map[string]any)
		where := fmt.Sprintf("%s arg %d", r.where, i)
		if !ok {
			return Kernel{}, malformed(where, "is %s, want a map", typeName(av))
		}
		ar := fields{m: am, where: where}
		a := Arg{
			Name:         ar.str(".name", false),
			TypeName:     ar.str(".type_name", false),
			Offset:       ar.size(".offset", true),
			Size:         ar.size(".size", true),
			ValueKind:    ar.str(".value_kind", true),
			AddressSpace: ar.str(".address_space", false),
			Access:       ar.str(".access", false),
			ActualAccess: ar.str(".actual_access", false),
			PointeeAlign: ar.size(".pointee_align", false),
			IsConst:      ar.flag(".is_const"),
			IsRestrict:   ar.flag(".is_restrict"),
			IsVolatile:   ar.flag(".is_volatile"),
			IsPipe:       ar.flag(".is_pipe"),
		}
		if ar.err != nil {
			return Kernel{}, ar.err
		}
		if a.Offset+a.Size > k.KernargSegmentSize {
			return Kernel{}, malformed(where, "bytes [%d, %d) run past the %d-byte kernarg segment", a.Offset, a.Offset+a.Size, k.KernargSegmentSize)
		}
		k.Args = append(k.Args, a)
	}
	return k, nil
}

package codeobj

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Feature is the state of a target feature (xnack, sramecc) recorded in the
// ELF header flags.
type Feature string

// Feature states. Any means the code runs with the feature on or off.
const (
	FeatureUnsupported Feature = "unsupported"
	FeatureAny         Feature = "any"
	FeatureOff         Feature = "off"
	FeatureOn          Feature = "on"
)

// File is what Parse reads from a code object.
type File struct {
	// CodeObjectVersion is 3, 4, 5 or 6, from e_ident[EI_ABIVERSION].
	CodeObjectVersion int `json:"code_object_version"`
	// Flags is e_flags; Mach its EF_AMDGPU_MACH byte.
	Flags uint32 `json:"flags"`
	Mach  uint32 `json:"mach"`
	// Processor is the gfx name for Mach ("gfx1100"), or "" for a mach value
	// this package does not know (Target still names it).
	Processor string  `json:"processor,omitempty"`
	XNACK     Feature `json:"xnack"`
	SRAMECC   Feature `json:"sramecc"`
	// GenericVersion is the generic-target version of a v6 object, else 0.
	GenericVersion int `json:"generic_version,omitempty"`
	// Target is amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx90a:xnack-".
	Target string `json:"target"`
	// MetadataVersion is amdhsa.version: [1, 1] for v4, [1, 2] for v5 and v6.
	MetadataVersion []int    `json:"metadata_version"`
	Kernels         []Kernel `json:"kernels"`
	// Metadata is the whole decoded note: map[string]any, []any, string,
	// int64, uint64, float64, bool, []byte, nil.
	Metadata map[string]any `json:"-"`
}

// Kernel is one entry of amdhsa.kernels.
type Kernel struct {
	Name   string `json:"name"`
	Symbol string `json:"symbol"`
	Args   []Arg  `json:"args"`

	KernargSegmentSize      int `json:"kernarg_segment_size"`
	KernargSegmentAlign     int `json:"kernarg_segment_align"`
	GroupSegmentFixedSize   int `json:"group_segment_fixed_size"`
	PrivateSegmentFixedSize int `json:"private_segment_fixed_size"`
	WavefrontSize           int `json:"wavefront_size"`
	MaxFlatWorkgroupSize    int `json:"max_flat_workgroup_size"`
	SGPRCount               int `json:"sgpr_count"`
	VGPRCount               int `json:"vgpr_count"`
	AGPRCount               int `json:"agpr_count,omitempty"`
	SGPRSpillCount          int `json:"sgpr_spill_count,omitempty"`
	VGPRSpillCount          int `json:"vgpr_spill_count,omitempty"`

	UniformWorkGroupSize bool `json:"uniform_work_group_size"`
	UsesDynamicStack     bool `json:"uses_dynamic_stack,omitempty"`
	// ReqdWorkgroupSize is .reqd_workgroup_size (x, y, z) when the kernel
	// requires an exact block shape, else nil.
	ReqdWorkgroupSize []int `json:"reqd_workgroup_size,omitempty"`
	WorkgroupSizeHint []int `json:"workgroup_size_hint,omitempty"`

	// Descriptor holds fields read from the 64-byte kernel descriptor the
	// symbol points at; Parse checks they agree with the metadata.
	Descriptor Descriptor `json:"descriptor"`
}

// Descriptor is the part of the kernel descriptor (amd_kernel_code_t's
// successor, "<name>.kd") that the metadata duplicates.
type Descriptor struct {
	GroupSegmentFixedSize   uint32 `json:"group_segment_fixed_size"`
	PrivateSegmentFixedSize uint32 `json:"private_segment_fixed_size"`
	KernargSize             uint32 `json:"kernarg_size"`
}

// Arg is one kernel argument, explicit or hidden.
type Arg struct {
	Name         string `json:"name,omitempty"`
	TypeName     string `json:"type_name,omitempty"`
	Offset       int    `json:"offset"`
	Size         int    `json:"size"`
	ValueKind    string `json:"value_kind"`
	AddressSpace string `json:"address_space,omitempty"`
	Access       string `json:"access,omitempty"`
	ActualAccess string `json:"actual_access,omitempty"`
	PointeeAlign int    `json:"pointee_align,omitempty"`
	IsConst      bool   `json:"is_const,omitempty"`
	IsRestrict   bool   `json:"is_restrict,omitempty"`
	IsVolatile   bool   `json:"is_volatile,omitempty"`
	IsPipe       bool   `json:"is_pipe,omitempty"`
}

// Hidden reports whether the runtime, not the caller, fills the argument
// (value kinds "hidden_*": grid sizes, heap pointer, ...).
func (a Arg) Hidden() bool { return strings.HasPrefix(a.ValueKind, "hidden_") }

// Kernel returns the kernel with that name.
func (f *File) Kernel(name string) (Kernel, bool) {
	for _, k := range f.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// TargetID is the processor with its feature settings as the runtime spells
// it, e.g. "gfx90a", "gfx90a:sramecc+:xnack-" (features that are "any" or
// unsupported are left out).
func (f *File) TargetID() string {
	id := f.Processor
	if f.SRAMECC == FeatureOn {
		id += ":sramecc+"
	} else if f.SRAMECC == FeatureOff {
		id += ":sramecc-"
	}
	if f.XNACK == FeatureOn {
		id += ":xnack+"
	} else if f.XNACK == FeatureOff {
		id += ":xnack-"
	}
	return id
}

// Parse reads an AMDGPU HSA code object (ELF64, code object v3 to v6): its
// header, its NT_AMDGPU_METADATA note and the kernel descriptors the
// metadata names. It never panics and allocates at most a small multiple of
// len(data); malformed input gives a *FormatError.
func Parse(data []byte) (*File, error) {
	ef, err := parseELF(data)
	if err != nil {
		return nil, err
	}
	f := &File{Flags: ef.flags, Mach: ef.flags & 0xff}
	switch ef.abiVersion {
	case 1, 2, 3, 4: // ELFABIVERSION_AMDGPU_HSA_V3 .. V6
		f.CodeObjectVersion = int(ef.abiVersion) + 2
	default:
		return nil, &FormatError{Where: "ELF header", Kind: ErrUnsupportedVersion,
			Reason: fmt.Sprintf("ABI version %d (code object v2 or unknown); v3 to v6 are supported", ef.abiVersion)}
	}
	f.Processor = machNames[f.Mach]
	f.XNACK, f.SRAMECC = decodeFeatures(f.CodeObjectVersion, ef.flags)
	if f.CodeObjectVersion >= 6 {
		f.GenericVersion = int(ef.flags >> 24)
	}

	notes, err := ef.notes()
	if err != nil {
		return nil, err
	}
	var desc []byte
	for _, n := range notes {
		if n.name != "AMDGPU" || n.typ != ntAMDGPUMetadata {
			continue
		}
		if desc != nil {
			return nil, malformed("notes", "more than one NT_AMDGPU_METADATA note")
		}
		desc = n.desc
	}
	if desc == nil {
		return nil, &FormatError{Where: "notes", Reason: "no note with owner \"AMDGPU\" and type 32", Kind: ErrNoMetadata}
	}
	doc, err := decodeMsgpack(desc)
	if err != nil {
		return nil, &FormatError{Where: "NT_AMDGPU_METADATA", Reason: "undecodable", Kind: ErrMalformed, Cause: err}
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, malformed("NT_AMDGPU_METADATA", "document is %s, want a map", typeName(doc))
	}
	f.Metadata = root
	if err := f.readMetadata(root); err != nil {
		return nil, err
	}
	if err := f.checkTarget(); err != nil {
		return nil, err
	}
	if err := f.readDescriptors(ef); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeFeatures reads the xnack and sramecc states from e_flags.
func decodeFeatures(cov int, flags uint32) (xnack, sramecc Feature) {
	if cov == 3 { // v3: one "on" bit each; off and unsupported look alike
		xnack, sramecc = FeatureOff, FeatureOff
		if flags&0x100 != 0 {
			xnack = FeatureOn
		}
		if flags&0x200 != 0 {
			sramecc = FeatureOn
		}
		return
	}
	states := [4]Feature{FeatureUnsupported, FeatureAny, FeatureOff, FeatureOn}
	return states[(flags>>8)&3], states[(flags>>10)&3]
}

// checkTarget requires amdhsa.target to name the processor and features of
// the ELF header, so a consumer can trust either.
func (f *File) checkTarget() error {
	const prefix = "amdgcn-amd-amdhsa--"
	if !strings.HasPrefix(f.Target, prefix) {
		return malformed("amdhsa.target", "%q does not start with %q", f.Target, prefix)
	}
	id := strings.TrimPrefix(f.Target, prefix)
	proc := id
	if i := strings.IndexAny(id, ":+"); i >= 0 {
		proc = id[:i]
	}
	if f.Processor == "" {
		f.Processor = proc // unknown mach value: the metadata names it
		return nil
	}
	if proc != f.Processor {
		return malformed("amdhsa.target", "names processor %q but the ELF flags say %s (mach %#x)", proc, f.Processor, f.Mach)
	}
	if f.CodeObjectVersion >= 4 && id != f.TargetID() {
		return malformed("amdhsa.target", "target id %q disagrees with the ELF flags (%s)", id, f.TargetID())
	}
	return nil
}

// readDescriptors finds each kernel's descriptor symbol and cross-checks it.
func (f *File) readDescriptors(ef *elfFile) error {
	syms, err := ef.dynamicSymbols()
	if err != nil {
		return err
	}
	bySym := make(map[string]elfSymbol, len(syms))
	for _, s := range syms {
		bySym[s.name] = s
	}
	for i := range f.Kernels {
		k := &f.Kernels[i]
		where := fmt.Sprintf("kernel %q", k.Name)
		s, ok := bySym[k.Symbol]
		if !ok {
			return malformed(where, "descriptor symbol %q is not in .dynsym", k.Symbol)
		}
		if s.typ != sttObject || s.size != 64 {
			return malformed(where, "descriptor symbol %q is type %d size %d, want a 64-byte STT_OBJECT", k.Symbol, s.typ, s.size)
		}
		kd, err := ef.symbolBytes(s)
		if err != nil {
			return err
		}
		le := binary.LittleEndian
		k.Descriptor = Descriptor{
			GroupSegmentFixedSize:   le.Uint32(kd[0:]),
			PrivateSegmentFixedSize: le.Uint32(kd[4:]),
			KernargSize:             le.Uint32(kd[8:]),
		}
		d := k.Descriptor
		switch {
		case int64(d.GroupSegmentFixedSize) != int64(k.GroupSegmentFixedSize):
			return malformed(where, "descriptor group segment %d, metadata %d", d.GroupSegmentFixedSize, k.GroupSegmentFixedSize)
		case int64(d.PrivateSegmentFixedSize) != int64(k.PrivateSegmentFixedSize):
			return malformed(where, "descriptor private segment %d, metadata %d", d.PrivateSegmentFixedSize, k.PrivateSegmentFixedSize)
		case int64(d.KernargSize) != int64(k.KernargSegmentSize):
			return malformed(where, "descriptor kernarg size %d, metadata %d", d.KernargSize, k.KernargSegmentSize)
		}
	}
	return nil
}

// machNames maps EF_AMDGPU_MACH values to processor names. The values were
// read from llvm-readelf-19 -h on objects clang-19 built for each processor;
// the test checks them on every shipped artifact.
var machNames = map[uint32]string{
	0x2c: "gfx900", 0x2d: "gfx902", 0x2e: "gfx904", 0x2f: "gfx906",
	0x30: "gfx908", 0x31: "gfx909", 0x32: "gfx90c", 0x3f: "gfx90a",
	0x40: "gfx940", 0x4b: "gfx941", 0x4c: "gfx942",
	0x33: "gfx1010", 0x34: "gfx1011", 0x35: "gfx1012", 0x42: "gfx1013",
	0x36: "gfx1030", 0x37: "gfx1031", 0x38: "gfx1032", 0x39: "gfx1033",
	0x3e: "gfx1034", 0x3d: "gfx1035", 0x45: "gfx1036",
	0x41: "gfx1100", 0x46: "gfx1101", 0x47: "gfx1102", 0x44: "gfx1103",
	0x43: "gfx1150", 0x4a: "gfx1151", 0x55: "gfx1152",
	0x48: "gfx1200", 0x4e: "gfx1201",
}

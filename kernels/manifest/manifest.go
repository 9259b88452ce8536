package manifest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/hipgo/hipgo/kernels/codeobj"
	"github.com/hipgo/hipgo/kernels/cubin"
	"github.com/hipgo/hipgo/kernels/msl"
	"github.com/hipgo/hipgo/kernels/ptx"
)

// Format is an artifact's file format.
type Format string

// The artifact formats.
const (
	FormatHSACO Format = "hsaco" // AMDGPU code object (ELF), one per gfx target
	FormatPTX   Format = "ptx"   // NVPTX assembly, JIT-compiled by the CUDA driver
	FormatMSL   Format = "msl"   // Metal Shading Language source, compiled at run time
	// FormatCubin is machine code that ptxas compiled from one of the
	// module's PTX artifacts (Source), for a GPU of exactly that SM.
	FormatCubin Format = "cubin"
)

// Schema is the manifest layout version this package reads and writes.
const Schema = 1

// MSLArch is the Arch of MSL artifacts, which do not depend on the GPU.
const MSLArch = "metal"

// Manifest lists every artifact under kernels/build.
type Manifest struct {
	Schema int `json:"schema"`
	// Toolchain is the first line of `clang-19 --version` on the machine that
	// built the artifacts.
	Toolchain string `json:"toolchain"`
	// CubinToolchain is the version line of the ptxas that compiled the
	// cubins ("" when none are shipped).
	CubinToolchain string     `json:"cubin_toolchain,omitempty"`
	Artifacts      []Artifact `json:"artifacts"`
}

// Artifact is one built file.
type Artifact struct {
	Module string `json:"module"`
	Format Format `json:"format"`
	// Arch is the gfx processor ("gfx1100"), the PTX target ("sm_90") or
	// "metal".
	Arch string `json:"arch"`
	// Path is slash-separated and relative to kernels/build.
	Path   string `json:"path"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	// CodeObjectVersion is the AMDGPU code object version (HSACO only).
	CodeObjectVersion int `json:"code_object_version,omitempty"`
	// Target is amdhsa.target (HSACO) or the PTX .target.
	Target string `json:"target,omitempty"`
	// PTXVersion is the PTX ISA version of .version (PTX only).
	PTXVersion string `json:"ptx_version,omitempty"`
	// Source is the PTX artifact a cubin was compiled from (cubin only); its
	// kernels and launch facts are the cubin's.
	Source  string       `json:"source,omitempty"`
	Kernels []KernelInfo `json:"kernels,omitempty"`
}

// KernelInfo is what a launch is checked against.
type KernelInfo struct {
	Name string `json:"name"`
	// Symbol is the kernel descriptor symbol (HSACO), else empty.
	Symbol string `json:"symbol,omitempty"`
	// Params are the kernel's arguments in order, hidden ones included
	// (HSACO code object v5 may add them; the runtime fills them).
	Params []Param `json:"params"`
	// KernargSize is the size of the argument buffer: kernarg_segment_size
	// (HSACO) or the end of the last parameter (PTX). KernargAlign is
	// kernarg_segment_align, or the largest parameter alignment.
	KernargSize  int `json:"kernarg_size"`
	KernargAlign int `json:"kernarg_align"`
	// MaxThreadsPerBlock is max_flat_workgroup_size (HSACO; 1024 unless the
	// source bounds it) or the product of .maxntid/.reqntid (PTX). 0 means
	// the code sets no limit and only the device's own applies.
	MaxThreadsPerBlock int `json:"max_threads_per_block"`
	// RequiredBlock is the exact (x, y, z) block shape the kernel demands
	// (.reqd_workgroup_size, .reqntid), else nil.
	RequiredBlock []int `json:"required_block,omitempty"`
	// StaticShared is the static shared memory (LDS) in bytes:
	// group_segment_fixed_size, or the PTX .shared variables the kernel uses.
	StaticShared int `json:"static_shared"`
	// DynamicShared reports a PTX kernel that uses an extern .shared array.
	DynamicShared bool `json:"dynamic_shared,omitempty"`
	// PrivateSize is private_segment_fixed_size (HSACO scratch per thread).
	PrivateSize int `json:"private_size,omitempty"`
	// WavefrontSize is 32 or 64 on AMDGPU and 32 (the warp) for PTX.
	WavefrontSize int `json:"wavefront_size"`
	SGPRs         int `json:"sgprs,omitempty"`
	VGPRs         int `json:"vgprs,omitempty"`
	AGPRs         int `json:"agprs,omitempty"`
	// Threadgroup is the size in bytes of each [[threadgroup(n)]] argument
	// of an MSL kernel, which the host sets (setThreadgroupMemoryLength)
	// before a dispatch. MSL only.
	Threadgroup []int `json:"threadgroup,omitempty"`
	// UniformWorkGroupSize: the code assumes every block is full
	// (.uniform_work_group_size); a launch API that allows a partial last
	// block must not use one.
	UniformWorkGroupSize bool `json:"uniform_work_group_size,omitempty"`
}

// Param is one kernel argument.
type Param struct {
	// Offset and Size place the argument in the argument buffer.
	Offset int `json:"offset"`
	Size   int `json:"size"`
	// Align is the alignment the argument has in the buffer: the declared or
	// natural alignment (PTX); for HSACO, whose metadata records none, the
	// largest power of two up to kernarg_segment_align dividing both Offset
	// and Size (the natural alignment of scalars and pointers).
	Align int `json:"align"`
	// Kind is the HSACO value kind ("global_buffer", "by_value",
	// "hidden_block_count_x", ...) or the PTX element type ("u64", "b8").
	Kind string `json:"kind"`
	// AddressSpace and Access describe HSACO pointer arguments.
	AddressSpace string `json:"address_space,omitempty"`
	Access       string `json:"access,omitempty"`
}

// Hidden reports whether the runtime, not the caller, supplies the argument.
func (p Param) Hidden() bool { return strings.HasPrefix(p.Kind, "hidden_") }

// ExplicitParams returns the parameters the caller passes.
func (k KernelInfo) ExplicitParams() []Param {
	out := make([]Param, 0, len(k.Params))
	for _, p := range k.Params {
		if !p.Hidden() {
			out = append(out, p)
		}
	}
	return out
}

// Clone returns a deep copy, so a caller can keep or change it freely.
func (k KernelInfo) Clone() KernelInfo {
	if k.Params != nil {
		k.Params = append(make([]Param, 0, len(k.Params)), k.Params...)
	}
	if k.RequiredBlock != nil {
		k.RequiredBlock = append([]int(nil), k.RequiredBlock...)
	}
	if k.Threadgroup != nil {
		k.Threadgroup = append([]int(nil), k.Threadgroup...)
	}
	return k
}

// Clone returns a deep copy.
func (a Artifact) Clone() Artifact {
	if a.Kernels != nil {
		ks := make([]KernelInfo, len(a.Kernels))
		for i, k := range a.Kernels {
			ks[i] = k.Clone()
		}
		a.Kernels = ks
	}
	return a
}

// Clone returns a deep copy.
func (m *Manifest) Clone() *Manifest {
	c := *m
	c.Artifacts = make([]Artifact, len(m.Artifacts))
	for i, a := range m.Artifacts {
		c.Artifacts[i] = a.Clone()
	}
	return &c
}

// FromCodeObject derives the kernel table of an HSACO artifact.
func FromCodeObject(f *codeobj.File) []KernelInfo {
	out := make([]KernelInfo, 0, len(f.Kernels))
	for _, k := range f.Kernels {
		ki := KernelInfo{
			Name:                 k.Name,
			Symbol:               k.Symbol,
			Params:               make([]Param, 0, len(k.Args)),
			KernargSize:          k.KernargSegmentSize,
			KernargAlign:         k.KernargSegmentAlign,
			MaxThreadsPerBlock:   k.MaxFlatWorkgroupSize,
			StaticShared:         k.GroupSegmentFixedSize,
			PrivateSize:          k.PrivateSegmentFixedSize,
			WavefrontSize:        k.WavefrontSize,
			SGPRs:                k.SGPRCount,
			VGPRs:                k.VGPRCount,
			AGPRs:                k.AGPRCount,
			UniformWorkGroupSize: k.UniformWorkGroupSize,
		}
		if k.ReqdWorkgroupSize != nil {
			ki.RequiredBlock = append([]int(nil), k.ReqdWorkgroupSize...)
		}
		for _, a := range k.Args {
			access := a.ActualAccess
			if access == "" {
				access = a.Access
			}
			ki.Params = append(ki.Params, Param{
				Offset:       a.Offset,
				Size:         a.Size,
				Align:        min(powerOfTwoDividing(a.Offset, k.KernargSegmentAlign), powerOfTwoDividing(a.Size, k.KernargSegmentAlign)),
				Kind:         a.ValueKind,
				AddressSpace: a.AddressSpace,
				Access:       access,
			})
		}
		out = append(out, ki)
	}
	return out
}

// powerOfTwoDividing is the largest power of two, at most limit, that
// divides n (limit itself for n == 0).
func powerOfTwoDividing(n, limit int) int {
	a := 1
	for a < limit && n%(a*2) == 0 {
		a *= 2
	}
	return a
}

// warpSize is the SIMT width of every NVIDIA GPU PTX can target.
const warpSize = 32

// FromPTX derives the kernel table of a PTX artifact.
func FromPTX(m *ptx.Module) []KernelInfo {
	out := make([]KernelInfo, 0, len(m.Kernels))
	for _, k := range m.Kernels {
		ki := KernelInfo{
			Name:               k.Name,
			Params:             make([]Param, 0, len(k.Params)),
			KernargSize:        k.ParamBytes,
			KernargAlign:       1,
			MaxThreadsPerBlock: k.MaxThreads(),
			StaticShared:       k.StaticShared,
			DynamicShared:      k.DynamicShared,
			WavefrontSize:      warpSize,
		}
		if k.ReqNTID != nil {
			ki.RequiredBlock = append([]int(nil), k.ReqNTID...)
		}
		for _, p := range k.Params {
			ki.KernargAlign = max(ki.KernargAlign, p.Align)
			ki.Params = append(ki.Params, Param{Offset: p.Offset, Size: p.Size, Align: p.Align, Kind: p.Type})
		}
		out = append(out, ki)
	}
	return out
}

// CubinMatches checks that a cubin is machine code for its source PTX
// artifact: the same target and the same kernel entry points.
func CubinMatches(f *cubin.File, src Artifact) error {
	if src.Format != FormatPTX {
		return fmt.Errorf("source %s is %s, not PTX", src.Path, src.Format)
	}
	if f.Arch() != src.Arch {
		return fmt.Errorf("cubin for %s, its PTX %s is for %s", f.Arch(), src.Path, src.Arch)
	}
	names := make([]string, 0, len(src.Kernels))
	for _, k := range src.Kernels {
		names = append(names, k.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(f.Entries, ",") {
		return fmt.Errorf("cubin entries %v, its PTX %s has kernels %v", f.Entries, src.Path, names)
	}
	return nil
}

// FromMSL derives the kernel table of an MSL source. Buffer argument i sits
// where argument i of the .cu twin does (natural alignment); a pointer is a
// device address ("global_buffer", 8 bytes), a constant value its scalar
// type. The block size is the kernel's [[max_total_threads_per_threadgroup]]
// where it declares one, else 0 (left to the pipeline Metal builds at run
// time).
func FromMSL(m *msl.Module) []KernelInfo {
	out := make([]KernelInfo, 0, len(m.Kernels))
	for _, k := range m.Kernels {
		ki := KernelInfo{Name: k.Name, Params: make([]Param, 0, len(k.Args)), KernargAlign: 1, MaxThreadsPerBlock: k.MaxThreads}
		off := 0
		for _, a := range k.Args {
			off = (off + a.Size - 1) / a.Size * a.Size
			p := Param{Offset: off, Size: a.Size, Align: a.Size, Kind: a.Type, AddressSpace: a.AddressSpace}
			if a.Pointer {
				p.Kind = "global_buffer"
			}
			ki.Params = append(ki.Params, p)
			ki.KernargAlign = max(ki.KernargAlign, a.Size)
			off += a.Size
		}
		ki.KernargSize = off
		for _, tg := range k.Threadgroup {
			ki.Threadgroup = append(ki.Threadgroup, tg.Bytes)
		}
		out = append(out, ki)
	}
	return out
}

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid kernel manifest")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Parse decodes and validates a manifest: known fields only, the schema this
// package writes, one artifact per (module, format, arch) and per path, clean
// relative paths, and well-formed digests.
func Parse(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if dec.More() {
		return nil, invalid("data after the JSON object")
	}
	if m.Schema != Schema {
		return nil, invalid("schema %d, this build reads %d", m.Schema, Schema)
	}
	paths := make(map[string]bool, len(m.Artifacts))
	keys := make(map[string]bool, len(m.Artifacts))
	for i, a := range m.Artifacts {
		where := fmt.Sprintf("artifact %d (%s)", i, a.Path)
		switch a.Format {
		case FormatHSACO, FormatPTX, FormatMSL:
		case FormatCubin:
			if a.Source == "" {
				return nil, invalid("%s: a cubin names no source PTX", where)
			}
		default:
			return nil, invalid("%s: unknown format %q", where, a.Format)
		}
		if a.Module == "" || a.Arch == "" {
			return nil, invalid("%s: empty module or arch", where)
		}
		if a.Path == "" || path.Clean(a.Path) != a.Path || path.IsAbs(a.Path) || strings.HasPrefix(a.Path, "../") || strings.Contains(a.Path, "\\") {
			return nil, invalid("%s: path is not a clean relative slash path", where)
		}
		if a.Size < 0 {
			return nil, invalid("%s: negative size", where)
		}
		if d, err := hex.DecodeString(a.SHA256); err != nil || len(d) != 32 || strings.ToLower(a.SHA256) != a.SHA256 {
			return nil, invalid("%s: sha256 %q is not 64 lowercase hex digits", where, a.SHA256)
		}
		key := a.Module + "\x00" + string(a.Format) + "\x00" + a.Arch
		if paths[a.Path] || keys[key] {
			return nil, invalid("%s: duplicate artifact", where)
		}
		paths[a.Path], keys[key] = true, true
	}
	return &m, nil
}

// Encode writes the manifest as indented JSON with a final newline, the
// form kernelc commits (stable, so rebuilding gives the same bytes). Objects
// and arrays that hold only scalars (a parameter, a block shape) stay on one
// line, which keeps the file a third of the size and still diffable.
func (m *Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(collapseLeaves(b), '\n'), nil
}

// collapseLeaves joins each indented JSON object or array whose members are
// all scalars onto the line that opens it. Input is MarshalIndent output, so
// every member is on its own line and strings cannot contain a newline.
func collapseLeaves(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		open := strings.TrimRight(lines[i], " ")
		if !strings.HasSuffix(open, "{") && !strings.HasSuffix(open, "[") {
			out = append(out, lines[i])
			continue
		}
		closer := "}"
		if strings.HasSuffix(open, "[") {
			closer = "]"
		}
		indent := len(open) - len(strings.TrimLeft(open, " "))
		var members []string
		j := i + 1
		leaf := true
		for ; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			ind := len(lines[j]) - len(strings.TrimLeft(lines[j], " "))
			if ind == indent && strings.HasPrefix(t, closer) {
				break
			}
			if strings.HasSuffix(t, "{") || strings.HasSuffix(t, "[") || ind != indent+2 {
				leaf = false
				break
			}
			members = append(members, strings.TrimSuffix(t, ","))
		}
		if !leaf || j == len(lines) || len(members) == 0 {
			out = append(out, lines[i])
			continue
		}
		out = append(out, open+strings.Join(members, ", ")+strings.TrimSpace(lines[j]))
		i = j
	}
	return []byte(strings.Join(out, "\n"))
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hipgo/hipgo/kernels/codeobj"
	"github.com/hipgo/hipgo/kernels/cubin"
	"github.com/hipgo/hipgo/kernels/ptx"
)

// inspectFile prints the parsed metadata of an HSACO or a cubin (ELF
// magic; e_machine tells them apart) or a PTX file.
func inspectFile(w io.Writer, path string, asJSON bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	switch {
	case cubin.IsCUDA(b):
		return show(w, path, b, asJSON, cubin.Parse, printCubin)
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return show(w, path, b, asJSON, codeobj.Parse, printCodeObject)
	}
	ptxParse := func(b []byte) (*ptx.Module, error) {
		m, err := ptx.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("not a code object (no ELF magic) and not PTX: %w", err)
		}
		return m, nil
	}
	return show(w, path, b, asJSON, ptxParse, printPTX)
}

// show prints what parse reads from b, as JSON or as print writes it.
func show[T any](w io.Writer, path string, b []byte, asJSON bool, parse func([]byte) (*T, error),
	print func(io.Writer, string, *T)) error {
	f, err := parse(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if asJSON {
		return writeJSON(w, f)
	}
	print(w, path, f)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printCodeObject(w io.Writer, path string, f *codeobj.File) {
	fmt.Fprintf(w, "%s: AMDGPU code object v%d, metadata %d.%d\n", path, f.CodeObjectVersion, f.MetadataVersion[0], f.MetadataVersion[1])
	fmt.Fprintf(w, "  target %s (processor %s, xnack %s, sramecc %s, e_flags %#x)\n", f.Target, f.Processor, f.XNACK, f.SRAMECC, f.Flags)
	for _, k := range f.Kernels {
		fmt.Fprintf(w, "kernel %s (descriptor %s)\n", k.Name, k.Symbol)
		fmt.Fprintf(w, "  kernarg %d bytes (align %d), LDS %d bytes, private %d bytes\n", k.KernargSegmentSize, k.KernargSegmentAlign, k.GroupSegmentFixedSize, k.PrivateSegmentFixedSize)
		fmt.Fprintf(w, "  wave%d, max %d threads per block, %d SGPRs, %d VGPRs", k.WavefrontSize, k.MaxFlatWorkgroupSize, k.SGPRCount, k.VGPRCount)
		if k.AGPRCount > 0 {
			fmt.Fprintf(w, ", %d AGPRs", k.AGPRCount)
		}
		if k.UniformWorkGroupSize {
			fmt.Fprint(w, ", uniform work-group size")
		}
		fmt.Fprintln(w)
		if k.ReqdWorkgroupSize != nil {
			fmt.Fprintf(w, "  requires block %v\n", k.ReqdWorkgroupSize)
		}
		for i, a := range k.Args {
			var extra []string
			for _, s := range []string{a.AddressSpace, a.ActualAccess, a.Access, a.Name} {
				if s != "" {
					extra = append(extra, s)
				}
			}
			fmt.Fprintf(w, "  arg %d: offset %d size %d %s %s\n", i, a.Offset, a.Size, a.ValueKind, strings.Join(extra, " "))
		}
	}
}

func printCubin(w io.Writer, path string, f *cubin.File) {
	fmt.Fprintf(w, "%s: NVIDIA cubin for %s (from PTX for compute_%d), %d kernels\n", path, f.Arch(), f.Virtual, len(f.Entries))
	for _, e := range f.Entries {
		fmt.Fprintf(w, "kernel %s\n", e)
	}
}

func printPTX(w io.Writer, path string, m *ptx.Module) {
	fmt.Fprintf(w, "%s: PTX %s, target %s", path, m.Version, m.Target)
	if len(m.TargetOptions) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(m.TargetOptions, ", "))
	}
	fmt.Fprintf(w, ", address size %d\n", m.AddressSize)
	for _, k := range m.Kernels {
		fmt.Fprintf(w, "kernel %s\n  params %d bytes, static shared %d bytes", k.Name, k.ParamBytes, k.StaticShared)
		if k.DynamicShared {
			fmt.Fprint(w, " + dynamic")
		}
		if k.MaxNTID != nil {
			fmt.Fprintf(w, ", .maxntid %v", k.MaxNTID)
		}
		if k.ReqNTID != nil {
			fmt.Fprintf(w, ", .reqntid %v", k.ReqNTID)
		}
		fmt.Fprintln(w)
		for i, p := range k.Params {
			arr := ""
			if p.Count != 1 {
				arr = fmt.Sprintf("[%d]", p.Count)
			}
			fmt.Fprintf(w, "  param %d: offset %d size %d align %d .%s%s %s\n", i, p.Offset, p.Size, p.Align, p.Type, arr, p.Name)
		}
	}
}

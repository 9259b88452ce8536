package hostkern

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Driver is a compiled host build of the forward kernels.
type Driver struct{ path string }

// repoRoot walks up from the working directory to the directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("hostkern: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Build compiles the driver of kernels/src/forward.cu with clang (a
// clang++ 19 path) into dir.
func Build(clang, dir string) (*Driver, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	shim := filepath.Join(root, "kernels", "hostemu", "hostemu.h")
	return build(clang, "forward_driver.cc", filepath.Join(dir, "forward-driver"),
		fmt.Sprintf("-DHIPGO_HOST_SHIM=%q", shim), "-I", filepath.Join(root, "kernels", "src"))
}

// BuildMetal compiles the same driver around kernels/src/forward.metal, the
// forward kernels' MSL port, with kernels/hostemu/metal's stand-in for
// Apple's metal_stdlib.
func BuildMetal(clang, dir string) (*Driver, error) {
	return buildMetal(clang, dir, "forward", "-DFW_METAL")
}

// buildMetal builds kernels/hostemu/<module>_driver.cc around
// kernels/src/<module>.metal. The source is copied into dir with its
// [[threadgroup(n)]] attributes renamed, because the stand-in metal_stdlib
// defines the address-space word threadgroup away.
func buildMetal(clang, dir, module, define string) (*Driver, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(filepath.Join(root, "kernels", "src", module+".metal"))
	if err != nil {
		return nil, fmt.Errorf("hostkern: %w", err)
	}
	src = bytes.ReplaceAll(src, []byte("[[threadgroup("), []byte("[[threadgroup_index("))
	srcDir := filepath.Join(dir, module+"-metal-src")
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return nil, fmt.Errorf("hostkern: %w", err)
	}
	if err := os.WriteFile(filepath.Join(srcDir, module+".metal"), src, 0o644); err != nil {
		return nil, fmt.Errorf("hostkern: %w", err)
	}
	return build(clang, module+"_driver.cc", filepath.Join(dir, module+"-metal-driver"), define, "-Wno-unknown-attributes",
		"-I", filepath.Join(root, "kernels", "hostemu"), "-I", filepath.Join(root, "kernels", "hostemu", "metal"),
		"-I", srcDir)
}

// build compiles kernels/hostemu/<driver> with the shared flags and args.
func build(clang, driver, out string, args ...string) (*Driver, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	args = append([]string{"-std=c++20", "-O2", "-pthread", "-ffp-contract=off",
		"-Wall", "-Wno-unknown-pragmas", "-Wno-unused-function", "-Werror"}, args...)
	args = append(args, filepath.Join(root, "kernels", "hostemu", driver), "-o", out)
	cmd := exec.Command(clang, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hostkern: %s: %w\n%s", cmd, err, msg)
	}
	return &Driver{path: out}, nil
}

// Arg is one kernel argument: a *Buf, View, U32, F32 or Null.
type Arg interface{ isArg() }

// Buf is a device buffer. Its Data is copied in at its first use in a Run
// and replaced by the final contents when Run returns; launches of one Run
// share it, so later ones see what earlier ones wrote. Shift places it that
// many bytes past a 64-byte boundary (to reach the kernels' unaligned
// paths).
type Buf struct {
	Data  []byte
	Shift int
}

// View points Off bytes into a buffer (a kernel argument that starts
// inside another buffer, such as the k part of the qkv rows).
type View struct {
	B   *Buf
	Off int
}

// U32 and F32 are scalar arguments; Null is a null pointer.
type (
	U32  uint32
	F32  float32
	Null struct{}
)

func (*Buf) isArg() {}
func (View) isArg() {}
func (U32) isArg()  {}
func (F32) isArg()  {}
func (Null) isArg() {}

// Launch is one kernel launch of Grid blocks (the block size is the
// kernel's own).
type Launch struct {
	Kernel string
	Grid   int
	Args   []Arg
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// Run executes the launches in order in one driver process.
func (d *Driver) Run(ctx context.Context, launches ...Launch) error {
	var in bytes.Buffer
	w := func(v uint32) { _ = binary.Write(&in, binary.LittleEndian, v) }
	ids := map[*Buf]uint32{}
	var bufs []*Buf
	buffer := func(b *Buf, off int) {
		w(0)
		id, seen := ids[b]
		if !seen {
			id = uint32(len(bufs))
			ids[b] = id
			bufs = append(bufs, b)
		}
		w(id)
		w(uint32(off))
		if !seen {
			w(uint32(b.Shift))
			w(uint32(len(b.Data)))
			in.Write(pad4(append([]byte(nil), b.Data...)))
		}
	}
	for _, l := range launches {
		w(uint32(len(l.Kernel)))
		in.Write(pad4([]byte(l.Kernel)))
		w(uint32(l.Grid))
		w(uint32(len(l.Args)))
		for _, a := range l.Args {
			switch a := a.(type) {
			case *Buf:
				buffer(a, 0)
			case View:
				if a.Off < 0 || a.Off > len(a.B.Data) {
					return fmt.Errorf("hostkern: view offset %d into %d bytes", a.Off, len(a.B.Data))
				}
				buffer(a.B, a.Off)
			case U32:
				w(1)
				w(uint32(a))
			case F32:
				w(2)
				w(math.Float32bits(float32(a)))
			case Null:
				w(3)
			default:
				return fmt.Errorf("hostkern: argument type %T", a)
			}
		}
	}
	w(0)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.path)
	cmd.Stdin = &in
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if os.Getenv("HOSTEMU_PROFILE") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hostkern: driver: %w: %s", err, errb.String())
	}
	for _, b := range bufs {
		n := (len(b.Data) + 3) / 4 * 4
		if out.Len() < n {
			return fmt.Errorf("hostkern: short output")
		}
		copy(b.Data, out.Next(n))
	}
	if out.Len() != 0 {
		return fmt.Errorf("hostkern: %d bytes of output left over", out.Len())
	}
	return nil
}

// F32s and U32s encode values as a buffer; Floats decodes one.
func F32s(v []float32) *Buf {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return &Buf{Data: b}
}

func U32s(v []uint32) *Buf {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return &Buf{Data: b}
}

// U16s encodes 16-bit patterns (bf16 or f16 weights).
func U16s(v []uint16) *Buf {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return &Buf{Data: b}
}

func (b *Buf) Floats() []float32 {
	v := make([]float32, len(b.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b.Data[4*i:]))
	}
	return v
}

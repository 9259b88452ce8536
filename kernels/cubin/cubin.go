package cubin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// ErrFormat: the data is not a well-formed cubin.
var ErrFormat = errors.New("not a well-formed cubin")

// File is what Parse reads from a cubin.
type File struct {
	// SM is the compute capability of the machine code (90 for sm_90a).
	SM int
	// Virtual is the compute capability of the PTX it was compiled from.
	Virtual int
	// ArchSpecific: an "a" build (sm_90a), which runs on SM alone.
	ArchSpecific bool
	// Entries are the kernel entry points, sorted.
	Entries []string
}

// Arch is the target name ptxas was given: "sm_90a", "sm_80".
func (f *File) Arch() string {
	if f.ArchSpecific {
		return fmt.Sprintf("sm_%da", f.SM)
	}
	return fmt.Sprintf("sm_%d", f.SM)
}

const (
	headerSize  = 64
	sectionSize = 64
	progSize    = 56
	symbolSize  = 24

	osabiCUDA   = 51  // ELFOSABI_CUDA
	machineCUDA = 190 // EM_CUDA
	shtSymtab   = 2
	shtStrtab   = 3
	shtNoBits   = 8
	sttFunc     = 2
	stbGlobal   = 1
	// stoEntry is STO_CUDA_ENTRY in st_other: the symbol is a kernel.
	stoEntry = 0x10
	// flagArchSpecific in e_flags marks an "a" target (ELF ABI 7).
	flagArchSpecific = 0x800
)

func bad(format string, args ...any) error {
	return fmt.Errorf("cubin: %w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// span returns data[off:off+n] or an error naming what.
func span(data []byte, off, n uint64, what string) ([]byte, error) {
	if off > uint64(len(data)) || n > uint64(len(data))-off {
		return nil, bad("%s: bytes [%d, %d+%d) outside the %d-byte file", what, off, off, n, len(data))
	}
	return data[off : off+n], nil
}

// IsCUDA reports whether data is an ELF file for EM_CUDA: a cubin, as
// opposed to another ELF such as an AMDGPU code object. Parse checks the
// rest.
func IsCUDA(data []byte) bool {
	return len(data) >= headerSize && bytes.Equal(data[:4], []byte("\x7fELF")) &&
		binary.LittleEndian.Uint16(data[18:]) == machineCUDA
}

// Parse reads a cubin: an ELF64 little-endian file for EM_CUDA with the CUDA
// OS/ABI. Its e_flags carry the SM in bits 0-7, the PTX's in bits 16-23.
func Parse(data []byte) (*File, error) {
	le := binary.LittleEndian
	if len(data) < headerSize || !bytes.Equal(data[:4], []byte("\x7fELF")) {
		return nil, bad("no ELF header")
	}
	if data[4] != 2 || data[5] != 1 {
		return nil, bad("class %d, encoding %d: want ELF64 little endian", data[4], data[5])
	}
	if data[7] != osabiCUDA {
		return nil, bad("OS/ABI %d, want CUDA (%d)", data[7], osabiCUDA)
	}
	if m := le.Uint16(data[18:]); m != machineCUDA {
		return nil, bad("machine %d, want EM_CUDA (%d)", m, machineCUDA)
	}
	flags := le.Uint32(data[48:])
	f := &File{SM: int(flags & 0xff), Virtual: int(flags >> 16 & 0xff), ArchSpecific: flags&flagArchSpecific != 0}
	if f.SM == 0 {
		return nil, bad("e_flags %#x name no SM", flags)
	}
	phoff, phentsize, phnum := le.Uint64(data[32:]), le.Uint16(data[54:]), le.Uint16(data[56:])
	if phnum > 0 && phentsize != progSize {
		return nil, bad("program headers of %d bytes, want %d", phentsize, progSize)
	}
	if _, err := span(data, phoff, uint64(phnum)*progSize, "program header table"); err != nil {
		return nil, err
	}
	shoff := le.Uint64(data[40:])
	shentsize, shnum := le.Uint16(data[58:]), le.Uint16(data[60:])
	if shentsize != sectionSize || shnum == 0 {
		return nil, bad("section headers: %d of %d bytes, want some of %d", shnum, shentsize, sectionSize)
	}
	tbl, err := span(data, shoff, uint64(shnum)*sectionSize, "section header table")
	if err != nil {
		return nil, err
	}
	type section struct {
		typ, link    uint32
		off, size, e uint64
	}
	secs := make([]section, shnum)
	for i := range secs {
		s := tbl[i*sectionSize:]
		secs[i] = section{typ: le.Uint32(s[4:]), off: le.Uint64(s[24:]), size: le.Uint64(s[32:]),
			link: le.Uint32(s[40:]), e: le.Uint64(s[56:])}
		if secs[i].typ != shtNoBits && secs[i].typ != 0 {
			if _, err := span(data, secs[i].off, secs[i].size, fmt.Sprintf("section %d", i)); err != nil {
				return nil, err
			}
		}
	}
	for i, s := range secs {
		if s.typ != shtSymtab {
			continue
		}
		if s.e != symbolSize || s.size%symbolSize != 0 {
			return nil, bad("section %d: symbol entries of %d bytes in %d, want %d", i, s.e, s.size, symbolSize)
		}
		syms, err := span(data, s.off, s.size, "symbol table")
		if err != nil {
			return nil, err
		}
		if int(s.link) >= len(secs) || secs[s.link].typ != shtStrtab {
			return nil, bad("section %d: link %d is not a string table", i, s.link)
		}
		strs, err := span(data, secs[s.link].off, secs[s.link].size, "symbol names")
		if err != nil {
			return nil, err
		}
		for j := 0; j+symbolSize <= len(syms); j += symbolSize {
			sym := syms[j:]
			info, other := sym[4], sym[5]
			if info&0xf != sttFunc || info>>4 != stbGlobal || other&stoEntry == 0 {
				continue
			}
			name, err := cstring(strs, uint64(le.Uint32(sym)))
			if err != nil {
				return nil, err
			}
			f.Entries = append(f.Entries, name)
		}
		sort.Strings(f.Entries)
		return f, nil
	}
	return nil, bad("no symbol table")
}

func cstring(tab []byte, off uint64) (string, error) {
	if off >= uint64(len(tab)) {
		return "", bad("name offset %d outside a %d-byte string table", off, len(tab))
	}
	end := bytes.IndexByte(tab[off:], 0)
	if end < 0 {
		return "", bad("name at %d is not NUL-terminated", off)
	}
	return string(tab[off : off+uint64(end)]), nil
}

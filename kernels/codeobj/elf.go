package codeobj

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A minimal, validating ELF64 little-endian reader: just what a code object
// needs (header, section headers, notes, the dynamic symbol table). Every
// offset and count is checked against the file length with overflow-safe
// arithmetic before use, so corrupt input yields an error, never a panic or an
// allocation larger than the input.

const (
	elfHeaderSize     = 64
	elfSectionHdrSize = 64
	elfProgHdrSize    = 56
	elfSymSize        = 24

	elfClass64      = 2
	elfData2LSB     = 1
	elfVersion      = 1
	elfOSABIHSA     = 64 // ELFOSABI_AMDGPU_HSA
	elfTypeDyn      = 3
	elfMachineAMDGP = 224 // EM_AMDGPU

	shtNull   = 0
	shtStrtab = 3
	shtNote   = 7
	shtNoBits = 8
	shtDynsym = 11

	ptNote = 4

	shnUndef     = 0
	shnLoReserve = 0xff00

	sttObject = 1

	// ntAMDGPUMetadata is NT_AMDGPU_METADATA, the msgpack note of code
	// object v3 and later, owned by "AMDGPU".
	ntAMDGPUMetadata = 32
)

type elfSection struct {
	name      string
	typ       uint32
	addr      uint64
	offset    uint64
	size      uint64
	link      uint32
	addralign uint64
	entsize   uint64
}

type elfSymbol struct {
	name  string
	typ   uint8
	shndx uint16
	value uint64
	size  uint64
}

type elfFile struct {
	data       []byte
	abiVersion uint8
	flags      uint32
	sections   []elfSection
	progNotes  [][2]uint64 // (offset, size) of PT_NOTE segments
}

// span returns data[off:off+n] or an error naming where.
func span(data []byte, off, n uint64, where string) ([]byte, error) {
	if off > uint64(len(data)) || n > uint64(len(data))-off {
		return nil, malformed(where, "bytes [%d, %d+%d) lie outside the %d-byte file", off, off, n, len(data))
	}
	return data[off : off+n], nil
}

func parseELF(data []byte) (*elfFile, error) {
	le := binary.LittleEndian
	if len(data) < 4 || !bytes.Equal(data[:4], []byte("\x7fELF")) {
		return nil, &FormatError{Where: "ELF header", Reason: "no ELF magic", Kind: ErrNotCodeObject}
	}
	if len(data) < elfHeaderSize {
		return nil, malformed("ELF header", "file is %d bytes, shorter than the 64-byte ELF64 header", len(data))
	}
	notCO := func(format string, args ...any) error {
		return &FormatError{Where: "ELF header", Reason: fmt.Sprintf(format, args...), Kind: ErrNotCodeObject}
	}
	switch {
	case data[4] != elfClass64:
		return nil, notCO("class %d, want ELFCLASS64", data[4])
	case data[5] != elfData2LSB:
		return nil, notCO("data encoding %d, want little endian", data[5])
	case data[6] != elfVersion:
		return nil, notCO("ident version %d, want 1", data[6])
	case data[7] != elfOSABIHSA:
		return nil, notCO("OS/ABI %d, want AMDGPU_HSA (64)", data[7])
	}
	f := &elfFile{data: data, abiVersion: data[8]}
	typ := le.Uint16(data[16:])
	machine := le.Uint16(data[18:])
	version := le.Uint32(data[20:])
	phoff := le.Uint64(data[32:])
	shoff := le.Uint64(data[40:])
	f.flags = le.Uint32(data[48:])
	ehsize := le.Uint16(data[52:])
	phentsize := le.Uint16(data[54:])
	phnum := le.Uint16(data[56:])
	shentsize := le.Uint16(data[58:])
	shnum := le.Uint16(data[60:])
	shstrndx := le.Uint16(data[62:])
	switch {
	case machine != elfMachineAMDGP:
		return nil, notCO("machine %d, want EM_AMDGPU (224)", machine)
	case typ != elfTypeDyn:
		return nil, malformed("ELF header", "type %d, want ET_DYN (3): a loadable code object is a shared object", typ)
	case version != elfVersion:
		return nil, malformed("ELF header", "version %d, want 1", version)
	case ehsize != elfHeaderSize:
		return nil, malformed("ELF header", "header size %d, want 64", ehsize)
	}

	if phnum > 0 {
		if phentsize != elfProgHdrSize {
			return nil, malformed("ELF header", "program header entry size %d, want 56", phentsize)
		}
		tbl, err := span(data, phoff, uint64(phnum)*elfProgHdrSize, "program header table")
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(phnum); i++ {
			p := tbl[i*elfProgHdrSize:]
			off, filesz := le.Uint64(p[8:]), le.Uint64(p[32:])
			if _, err := span(data, off, filesz, fmt.Sprintf("program header %d", i)); err != nil {
				return nil, err
			}
			if le.Uint32(p[0:]) == ptNote {
				f.progNotes = append(f.progNotes, [2]uint64{off, filesz})
			}
		}
	}

	if shnum == 0 {
		if shoff != 0 {
			return nil, malformed("ELF header", "extended section numbering (e_shnum 0, e_shoff %d) is not used by code objects", shoff)
		}
		return f, nil
	}
	if shentsize != elfSectionHdrSize {
		return nil, malformed("ELF header", "section header entry size %d, want 64", shentsize)
	}
	if shstrndx == shnUndef || shstrndx >= shnum {
		return nil, malformed("ELF header", "section name table index %d outside %d sections", shstrndx, shnum)
	}
	tbl, err := span(data, shoff, uint64(shnum)*elfSectionHdrSize, "section header table")
	if err != nil {
		return nil, err
	}
	f.sections = make([]elfSection, shnum)
	nameOff := make([]uint32, shnum)
	for i := range f.sections {
		s := tbl[i*elfSectionHdrSize:]
		sec := elfSection{
			typ:       le.Uint32(s[4:]),
			addr:      le.Uint64(s[16:]),
			offset:    le.Uint64(s[24:]),
			size:      le.Uint64(s[32:]),
			link:      le.Uint32(s[40:]),
			addralign: le.Uint64(s[48:]),
			entsize:   le.Uint64(s[56:]),
		}
		nameOff[i] = le.Uint32(s[0:])
		where := fmt.Sprintf("section %d", i)
		if sec.typ != shtNoBits && sec.typ != shtNull {
			if _, err := span(data, sec.offset, sec.size, where); err != nil {
				return nil, err
			}
		}
		if sec.addralign > 1 && sec.addralign&(sec.addralign-1) != 0 {
			return nil, malformed(where, "alignment %d is not a power of two", sec.addralign)
		}
		f.sections[i] = sec
	}
	strtab := f.sections[shstrndx]
	if strtab.typ != shtStrtab {
		return nil, malformed("ELF header", "section name table (section %d) has type %d, want SHT_STRTAB", shstrndx, strtab.typ)
	}
	names := data[strtab.offset : strtab.offset+strtab.size]
	for i := range f.sections {
		n, err := cstring(names, uint64(nameOff[i]), fmt.Sprintf("section %d name", i))
		if err != nil {
			return nil, err
		}
		f.sections[i].name = n
	}
	return f, nil
}

// cstring reads a NUL-terminated string at off in tab.
func cstring(tab []byte, off uint64, where string) (string, error) {
	if off >= uint64(len(tab)) {
		return "", malformed(where, "string offset %d outside a %d-byte string table", off, len(tab))
	}
	end := bytes.IndexByte(tab[off:], 0)
	if end < 0 {
		return "", malformed(where, "string at offset %d is not NUL-terminated", off)
	}
	return string(tab[off : off+uint64(end)]), nil
}

// note is one ELF note record.
type note struct {
	name string
	typ  uint32
	desc []byte
}

// notes returns every note record, from SHT_NOTE sections when the file has
// section headers, else from PT_NOTE segments.
func (f *elfFile) notes() ([]note, error) {
	var out []note
	found := false
	for i, s := range f.sections {
		if s.typ != shtNote {
			continue
		}
		found = true
		ns, err := parseNotes(f.data[s.offset:s.offset+s.size], s.addralign, fmt.Sprintf("note section %d", i))
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	}
	if found {
		return out, nil
	}
	for i, p := range f.progNotes {
		ns, err := parseNotes(f.data[p[0]:p[0]+p[1]], 4, fmt.Sprintf("note segment %d", i))
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	}
	return out, nil
}

// parseNotes splits a note area. Name and descriptor are padded to the
// area's alignment, which is 4 (what LLVM emits) or 8.
func parseNotes(b []byte, align uint64, where string) ([]note, error) {
	if align < 4 {
		align = 4
	}
	if align != 4 && align != 8 {
		return nil, malformed(where, "note alignment %d, want 4 or 8", align)
	}
	pad := func(n uint64) uint64 { return (n + align - 1) &^ (align - 1) }
	var out []note
	le := binary.LittleEndian
	for off := uint64(0); off < uint64(len(b)); {
		w := fmt.Sprintf("%s, note at byte %d", where, off)
		hdr, err := span(b, off, 12, w)
		if err != nil {
			return nil, err
		}
		namesz, descsz, typ := uint64(le.Uint32(hdr)), uint64(le.Uint32(hdr[4:])), le.Uint32(hdr[8:])
		off += 12
		name, err := span(b, off, namesz, w+" name")
		if err != nil {
			return nil, err
		}
		off += pad(namesz) // namesz < 2^32, so no overflow
		desc, err := span(b, off, descsz, w+" descriptor")
		if err != nil {
			return nil, err
		}
		off += pad(descsz)
		// The name includes its terminating NUL.
		if n := len(name); n > 0 && name[n-1] == 0 {
			name = name[:n-1]
		}
		out = append(out, note{name: string(name), typ: typ, desc: desc})
	}
	return out, nil
}

// dynamicSymbols returns the .dynsym entries (without the null symbol 0).
func (f *elfFile) dynamicSymbols() ([]elfSymbol, error) {
	for i, s := range f.sections {
		if s.typ != shtDynsym {
			continue
		}
		where := fmt.Sprintf("section %d (%s)", i, s.name)
		if s.entsize != elfSymSize {
			return nil, malformed(where, "symbol entry size %d, want 24", s.entsize)
		}
		if s.size%elfSymSize != 0 {
			return nil, malformed(where, "size %d is not a multiple of 24", s.size)
		}
		if uint64(s.link) >= uint64(len(f.sections)) || f.sections[s.link].typ != shtStrtab {
			return nil, malformed(where, "linked string table %d is not a SHT_STRTAB section", s.link)
		}
		str := f.sections[s.link]
		strs := f.data[str.offset : str.offset+str.size]
		tab := f.data[s.offset : s.offset+s.size]
		n := len(tab) / elfSymSize
		syms := make([]elfSymbol, 0, n)
		le := binary.LittleEndian
		for j := 1; j < n; j++ {
			e := tab[j*elfSymSize:]
			name, err := cstring(strs, uint64(le.Uint32(e)), fmt.Sprintf("%s symbol %d", where, j))
			if err != nil {
				return nil, err
			}
			syms = append(syms, elfSymbol{
				name:  name,
				typ:   e[4] & 0xf,
				shndx: le.Uint16(e[6:]),
				value: le.Uint64(e[8:]),
				size:  le.Uint64(e[16:]),
			})
		}
		return syms, nil
	}
	return nil, nil
}

// symbolBytes returns the file bytes of a defined symbol.
func (f *elfFile) symbolBytes(s elfSymbol) ([]byte, error) {
	where := fmt.Sprintf("symbol %q", s.name)
	if s.shndx == shnUndef || s.shndx >= shnLoReserve || int(s.shndx) >= len(f.sections) {
		return nil, malformed(where, "section index %d does not name a section", s.shndx)
	}
	sec := f.sections[s.shndx]
	if sec.typ == shtNoBits || sec.typ == shtNull {
		return nil, malformed(where, "lies in section %d (%s), which has no file contents", s.shndx, sec.name)
	}
	if s.value < sec.addr || s.value-sec.addr > sec.size || s.size > sec.size-(s.value-sec.addr) {
		return nil, malformed(where, "[%#x, +%d) lies outside its section %s [%#x, +%d)", s.value, s.size, sec.name, sec.addr, sec.size)
	}
	start := sec.offset + (s.value - sec.addr)
	return f.data[start : start+s.size], nil
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hipgo/hipgo/tools/gencodes/cenum"
)

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ",") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	var headers headerList
	lang := flag.String("lang", "", "which table: hip or hsa")
	out := flag.String("o", "zcodes.go", "output file")
	flag.Var(&headers, "header", "C header to read (repeatable)")
	flag.Parse()
	if err := run(*lang, headers, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gencodes:", err)
		os.Exit(1)
	}
}

func run(lang string, headers []string, out string) error {
	if len(headers) == 0 {
		return errors.New("no -header given")
	}
	var src []byte
	var err error
	switch lang {
	case "hip":
		src, err = genHIP(headers)
	case "hsa":
		src, err = genHSA(headers)
	default:
		return fmt.Errorf("-lang=%q: want hip or hsa", lang)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// entry is one enumerator headed for the Go file.
type entry struct {
	cName  string
	goName string
	value  int64
	alias  string // the canonical C name when this one is a later alias
}

func readEnums(path string) ([]cenum.Enum, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	enums, err := cenum.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return enums, nil
}

func genHIP(headers []string) ([]byte, error) {
	if len(headers) != 1 {
		return nil, errors.New("hip: want exactly one -header (hip_runtime_api.h)")
	}
	enums, err := readEnums(headers[0])
	if err != nil {
		return nil, err
	}
	e, ok := cenum.Find(enums, "hipError_t")
	if !ok {
		return nil, fmt.Errorf("%s: no hipError_t enum", headers[0])
	}
	var entries []entry
	for _, c := range e.Constants {
		var goName string
		switch {
		case c.Name == "hipSuccess":
			goName = "Success"
		case strings.HasPrefix(c.Name, "hipError") && len(c.Name) > len("hipError"):
			goName = "Err" + strings.TrimPrefix(c.Name, "hipError")
		default:
			return nil, fmt.Errorf("%s:%d: enumerator %s does not start with hipError", headers[0], c.Line, c.Name)
		}
		entries = append(entries, entry{cName: c.Name, goName: goName, value: c.Value})
	}
	markAliases(entries)
	source := fmt.Sprintf("hipError_t in %s", headers[0])
	if v := hipVersion(filepath.Join(filepath.Dir(headers[0]), "hip_version.h")); v != "" {
		source += " (HIP " + v + ")"
	}
	return render(renderArgs{
		pkg: "hip", typ: "Code", table: "headerCodes", tableType: "codeName",
		args: "-lang=hip -header=" + headers[0], source: source, entries: entries,
		format: func(v int64) string { return fmt.Sprintf("%d", v) },
	})
}

// hipVersion reads "major.minor.patch" from hip_version.h, or "" without it.
func hipVersion(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	parts := make([]string, 0, 3)
	for _, k := range []string{"MAJOR", "MINOR", "PATCH"} {
		m := regexp.MustCompile(`#define HIP_VERSION_` + k + `\s+(\d+)`).FindSubmatch(b)
		if m == nil {
			return ""
		}
		parts = append(parts, string(m[1]))
	}
	return strings.Join(parts, ".")
}

func genHSA(headers []string) ([]byte, error) {
	var entries []entry
	seen := map[string]bool{}
	for _, h := range headers {
		enums, err := readEnums(h)
		if err != nil {
			return nil, err
		}
		for _, e := range enums {
			for _, c := range e.Constants {
				if !strings.HasPrefix(c.Name, "HSA_STATUS_") || seen[c.Name] {
					continue
				}
				seen[c.Name] = true
				entries = append(entries, entry{cName: c.Name, goName: hsaGoName(c.Name), value: c.Value})
			}
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("no HSA_STATUS_ enumerators in %s", strings.Join(headers, ", "))
	}
	markAliases(entries)
	return render(renderArgs{
		pkg: "hsa", typ: "Status", table: "headerStatuses", tableType: "statusName",
		args: "-lang=hsa -header=" + strings.Join(headers, " -header="), source: "HSA_STATUS_* in " + strings.Join(headers, ", "),
		entries: entries,
		format:  func(v int64) string { return fmt.Sprintf("%#x", v) },
	})
}

// hsaGoName maps HSA_STATUS_ERROR_OUT_OF_RESOURCES to ErrOutOfResources,
// HSA_STATUS_ERROR to ErrGeneric and HSA_STATUS_INFO_BREAK to InfoBreak.
func hsaGoName(c string) string {
	rest := strings.TrimPrefix(c, "HSA_STATUS_")
	switch {
	case rest == "ERROR":
		return "ErrGeneric"
	case strings.HasPrefix(rest, "ERROR_"):
		return "Err" + camel(strings.TrimPrefix(rest, "ERROR_"))
	}
	return camel(rest)
}

// initialisms keep Go's capitalisation (ISA, not Isa).
var initialisms = map[string]bool{"ISA": true, "CU": true, "ID": true}

func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		if initialisms[w] {
			b.WriteString(w)
			continue
		}
		b.WriteString(w[:1])
		b.WriteString(strings.ToLower(w[1:]))
	}
	return b.String()
}

// markAliases records, for each enumerator whose value an earlier one
// already has, the earlier (canonical) name.
func markAliases(entries []entry) {
	first := map[int64]string{}
	for i := range entries {
		if c, ok := first[entries[i].value]; ok {
			entries[i].alias = c
			continue
		}
		first[entries[i].value] = entries[i].cName
	}
}

type renderArgs struct {
	pkg, typ, table, tableType string
	args, source               string
	entries                    []entry
	format                     func(int64) string
}

func render(a renderArgs) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by \"gencodes %s\"; DO NOT EDIT.\n\n", a.args)
	fmt.Fprintf(&b, "package %s\n\n", a.pkg)
	fmt.Fprintf(&b, "// Constants for every enumerator of %s.\n", a.source)
	b.WriteString("const (\n")
	for _, e := range a.entries {
		if e.alias != "" {
			fmt.Fprintf(&b, "\t// %s is %s (%s), a deprecated alias of %s.\n", e.goName, e.cName, a.format(e.value), e.alias)
		} else {
			fmt.Fprintf(&b, "\t// %s is %s (%s).\n", e.goName, e.cName, a.format(e.value))
		}
		fmt.Fprintf(&b, "\t%s %s = %s\n", e.goName, a.typ, a.format(e.value))
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "// %s holds each distinct value of %s with the name of its first\n// enumerator, the one the library's own name function returns.\n", a.table, a.source)
	fmt.Fprintf(&b, "var %s = [...]%s{\n", a.table, a.tableType)
	for _, e := range a.entries {
		if e.alias == "" {
			fmt.Fprintf(&b, "\t{%s, %q},\n", e.goName, e.cName)
		}
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

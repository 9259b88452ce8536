package statuscheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

type module struct {
	root string // directory holding go.mod
	path string // module path
}

// findModule walks up from dir to the go.mod that owns it.
func findModule(dir string) (module, error) {
	for d := dir; ; {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
					return module{root: d, path: strings.Trim(strings.TrimSpace(rest), `"`)}, nil
				}
			}
			return module{}, fmt.Errorf("statuscheck: %s/go.mod has no module line", d)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return module{}, err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return module{}, fmt.Errorf("statuscheck: no go.mod above %s", dir)
		}
		d = parent
	}
}

// newExportImporter returns an importer for the given imports and their
// dependencies, reading the export data the go command builds
// (`go list -export -deps`) for goos/goarch with cgo off.
func newExportImporter(fset *token.FileSet, modRoot string, imports []string, goos, goarch string) (types.Importer, error) {
	exports := map[string]string{}
	var wanted []string
	for _, p := range imports {
		if p != "unsafe" && p != "C" {
			wanted = append(wanted, p)
		}
	}
	if len(wanted) > 0 {
		goTool, err := exec.LookPath("go")
		if err != nil {
			return nil, fmt.Errorf("statuscheck needs the go command: %w", err)
		}
		args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, wanted...)
		cmd := exec.Command(goTool, args...)
		cmd.Dir = modRoot
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go list -export %s: %w: %s", strings.Join(wanted, " "), err, strings.TrimSpace(stderr.String()))
		}
		sc := bufio.NewScanner(&stdout)
		for sc.Scan() {
			path, file, ok := strings.Cut(sc.Text(), "\t")
			if ok && file != "" {
				exports[path] = file
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(file)
	}
	return importer.ForCompiler(fset, "gc", lookup), nil
}

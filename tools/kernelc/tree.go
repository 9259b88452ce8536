package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// listTree returns the slash-separated paths of the regular files under
// root; a missing root is an empty tree.
func listTree(root string) (map[string]bool, error) {
	files := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = true
		return nil
	})
	return files, err
}

// difference is one file that differs between a fresh build and the tree.
type difference struct {
	path string
	why  string // "content differs", "missing", "not produced by the build"
}

func (d difference) String() string { return d.path + " (" + d.why + ")" }

// diffTrees compares the fresh build in want with the tree in have, byte
// for byte, and returns every difference sorted by path.
func diffTrees(want, have string) ([]difference, error) {
	w, err := listTree(want)
	if err != nil {
		return nil, err
	}
	h, err := listTree(have)
	if err != nil {
		return nil, err
	}
	var out []difference
	for p := range w {
		if !h[p] {
			out = append(out, difference{p, "missing"})
			continue
		}
		a, err := os.ReadFile(filepath.Join(want, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(filepath.Join(have, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(a, b) {
			out = append(out, difference{p, "content differs"})
		}
	}
	for p := range h {
		if !w[p] {
			out = append(out, difference{p, "not produced by the build"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// syncTree makes dst equal to src: it writes the files that differ and
// removes the files (and then empty directories) the build no longer makes.
func syncTree(src, dst string) ([]difference, error) {
	diffs, err := diffTrees(src, dst)
	if err != nil {
		return nil, err
	}
	for _, d := range diffs {
		target := filepath.Join(dst, filepath.FromSlash(d.path))
		if d.why == "not produced by the build" {
			if err := os.Remove(target); err != nil {
				return nil, err
			}
			removeEmptyParents(dst, filepath.Dir(target))
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(d.path)))
		if err != nil {
			return nil, err
		}
		if err := writeFileAtomic(target, b); err != nil {
			return nil, err
		}
	}
	return diffs, nil
}

// writeFileAtomic replaces path with b through a rename, so a reader (or an
// interrupted build) never sees a half-written artifact.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kernelc-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := firstErr(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// removeEmptyParents removes dir and its parents up to (not including) root
// while they are empty.
func removeEmptyParents(root, dir string) {
	for dir != root && len(dir) > len(root) {
		if err := os.Remove(dir); err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

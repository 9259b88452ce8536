package safetensors

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// File names of a Hugging Face checkpoint.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Set is a checkpoint's tensors, in one file or sharded over several.
type Set struct {
	files  []*File
	byName map[string]*File
}

// OpenDir opens dir/model.safetensors.index.json and its shards when the index
// exists, else dir/model.safetensors. Shards are memory-mapped.
func OpenDir(dir string) (*Set, error) {
	idx := filepath.Join(dir, IndexFile)
	data, err := os.ReadFile(idx)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := Open(filepath.Join(dir, SingleFile))
		if err != nil {
			return nil, err
		}
		return newSet([]*File{f})
	}
	if err != nil {
		return nil, &Error{File: idx, Kind: ErrIO, Err: err}
	}
	return openIndexed(idx, data, func(shard string) (*File, error) { return Open(filepath.Join(dir, shard)) })
}

// OpenDirFS is OpenDir over an fs.FS (dir "." for the root).
func OpenDirFS(fsys fs.FS, dir string) (*Set, error) {
	idx := path.Join(dir, IndexFile)
	data, err := fs.ReadFile(fsys, idx)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := OpenFS(fsys, path.Join(dir, SingleFile))
		if err != nil {
			return nil, err
		}
		return newSet([]*File{f})
	}
	if err != nil {
		return nil, &Error{File: idx, Kind: ErrIO, Err: err}
	}
	return openIndexed(idx, data, func(shard string) (*File, error) { return OpenFS(fsys, path.Join(dir, shard)) })
}

// openIndexed parses an index (weight_map: tensor -> shard file) and opens the shards.
func openIndexed(idx string, data []byte, open func(string) (*File, error)) (*Set, error) {
	var ix struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, &Error{File: idx, Kind: ErrIndex, Detail: "invalid JSON", Err: err}
	}
	if len(ix.WeightMap) == 0 {
		return nil, errorf(idx, "", ErrIndex, "weight_map is missing or empty")
	}
	shardNames := map[string]bool{}
	for tensor, shard := range ix.WeightMap {
		// A shard is a plain file name beside the index; anything else could
		// escape the model directory.
		if shard == "" || shard != path.Base(shard) || strings.ContainsAny(shard, `/\`) || shard == "." || shard == ".." {
			return nil, errorf(idx, tensor, ErrIndex, "shard %q is not a file name in the model directory", shard)
		}
		shardNames[shard] = true
	}
	names := make([]string, 0, len(shardNames))
	for s := range shardNames {
		names = append(names, s)
	}
	sort.Strings(names)
	files := make([]*File, 0, len(names))
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, s := range names {
		f, err := open(s)
		if err != nil {
			closeAll()
			return nil, err
		}
		files = append(files, f)
	}
	set, err := newSet(files)
	if err != nil {
		closeAll()
		return nil, err
	}
	// The index must agree with the shards, or a tensor would silently come from the wrong place.
	for tensor, shard := range ix.WeightMap {
		f, ok := set.byName[tensor]
		if !ok || path.Base(f.name) != shard {
			closeAll()
			return nil, errorf(idx, tensor, ErrIndex, "weight_map names shard %q, which does not hold this tensor", shard)
		}
	}
	return set, nil
}

// NewSet joins already opened files; a tensor name in two files is an error.
func NewSet(files ...*File) (*Set, error) { return newSet(files) }

func newSet(files []*File) (*Set, error) {
	s := &Set{files: files, byName: map[string]*File{}}
	for _, f := range files {
		for _, n := range f.h.names {
			if other, dup := s.byName[n]; dup {
				return nil, errorf(f.name, n, ErrIndex, "tensor also in %s", other.name)
			}
			s.byName[n] = f
		}
	}
	return s, nil
}

// File returns the file holding the named tensor.
func (s *Set) File(tensor string) (*File, bool) {
	f, ok := s.byName[tensor]
	return f, ok
}

// Files lists the set's files.
func (s *Set) Files() []*File { return append([]*File(nil), s.files...) }

// Info describes a tensor and names its file.
func (s *Set) Info(tensor string) (TensorInfo, *File, bool) {
	f, ok := s.byName[tensor]
	if !ok {
		return TensorInfo{}, nil, false
	}
	t, _ := f.Info(tensor)
	return t, f, true
}

// Names lists every tensor, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close closes every file.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.files {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

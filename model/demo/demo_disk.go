//go:build hipgo_demo_from_disk

package demo

import (
	"io/fs"
	"os"
	"path/filepath"
)

// FS returns the demo model read from disk instead of embedded: the GPU
// bundle (scripts/gpu-bundle.sh) builds with the hipgo_demo_from_disk tag so
// that its binaries do not each carry the 21 MB of weights; the checkout
// beside them has the files. It looks in $HIPGO_DEMO_DIR, then model/demo
// and demo under the working directory; a missing directory gives an fs.FS
// whose reads fail with the paths tried.
func FS() fs.FS {
	tried := []string{os.Getenv("HIPGO_DEMO_DIR"), filepath.Join("model", "demo"), "demo", "."}
	for _, dir := range tried {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
			return os.DirFS(dir)
		}
	}
	return os.DirFS(filepath.Join("model", "demo"))
}

//go:build !linux && !darwin

package safetensors

// mapFile is not available here: Open reads through golang.org/x/exp/mmap
// (which copies), and File.Mapped lends nothing.
func mapFile(string) (*Mapping, bool, error) { return nil, false, nil }

func munmap([]byte) error { return nil }

// Package safetensors reads and writes the safetensors format: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the raw little-endian tensor data.
//
// A File validates its whole header when it is opened (length bound, JSON,
// dtype sizes against shapes, offsets inside the data section and not
// overlapping), so later reads cannot go out of range. Tensor data is read on
// demand through an io.ReaderAt: a memory-mapped file (golang.org/x/exp/mmap)
// for paths, the file itself for an fs.FS that supports ReadAt (embed.FS does),
// or a byte slice. Every error is a *Error naming the file and, where there is
// one, the tensor; errors.Is matches its kind (ErrHeader, ErrTruncated,
// ErrNotFound, ErrDType, ErrIndex, ErrIO).
//
// Nothing copies the whole file: each read copies one tensor into the
// caller's buffer (x/exp/mmap only offers a copying ReadAt). That copy is
// deliberate. Weights that pointed into the mapping would save it, but then
// a model would have to keep the file mapped for its lifetime, and a weight
// read after Close, or after the file shrank under us, would be a fault that
// kills the process rather than an error; F16 and BF16-to-float32 loads
// convert anyway. Copying also lets a mapping be closed as soon as loading
// ends, and the page cache serves the reads.
//
// A Set joins the shards of a sharded checkpoint (model.safetensors.index.json)
// or holds the single model.safetensors.
package safetensors

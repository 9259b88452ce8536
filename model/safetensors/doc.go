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
// caller's buffer, and File.Mapped lends a tensor's bytes in place instead,
// for a caller that would otherwise keep a copy identical to the file (the
// model package's CPU weights, when the file's dtype is the one it keeps):
// the weights then cost no memory beyond the page cache, and loading does
// not peak at the file plus a copy of it. Open maps the file itself for
// that (Linux and macOS; elsewhere it reads through golang.org/x/exp/mmap
// and lends nothing). Lending has a price the copies do not: the file stays
// mapped for as long as the lent bytes are used (the *Mapping returned with
// them must be kept reachable; Close leaves a lent mapping to the garbage
// collector), the bytes are read-only (a write faults), a file truncated on
// disk makes a later read fault rather than fail (the model package's CPU
// forward pass turns that fault into an error: debug.SetPanicOnFault), and
// one rewritten in place changes them. Without a lender a mapping is closed
// as soon as loading
// ends, and the page cache serves the reads.
//
// A Set joins the shards of a sharded checkpoint (model.safetensors.index.json)
// or holds the single model.safetensors.
package safetensors

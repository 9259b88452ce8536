package tokenizer

import (
	"slices"
	"sync"
	"unicode/utf8"
)

// bpeModel is `tokenizers`' BPE model without dropout, byte fallback or
// subword prefixes/suffixes (those are load errors).
type bpeModel struct {
	vocab        map[string]uint32
	merges       map[uint64]mergeRule // key: left id << 32 | right id
	ignoreMerges bool                 // a word that is itself in the vocabulary is one token
	hasUnk       bool
	unkID        uint32
	fuseUnk      bool
	cache        wordCache
}

// mergeRule is what a pair of adjacent tokens merges into, and the merge's
// rank (its index in the merges list; lower merges first).
type mergeRule struct {
	rank uint32
	id   uint32
}

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

// Words shorter than maxCachedWord bytes are cached, like `tokenizers`
// (MAX_LENGTH 256, capacity 10000). The cache only saves time.
const (
	maxCachedWord = 256
	cacheCapacity = 10000
)

// wordCache maps a pre-tokenized word to its ids. It is bounded: when full it
// is emptied and refilled, so a long-running process keeps a fresh working
// set.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]uint32
}

func (c *wordCache) get(word []byte) ([]uint32, bool) {
	c.mu.RLock()
	ids, ok := c.m[string(word)]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word []byte, ids []uint32) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheCapacity {
		c.m = make(map[string][]uint32, 1024)
	}
	c.m[string(word)] = ids
	c.mu.Unlock()
}

// symbol is one token of a word being merged, in a doubly linked list over
// the slice; a merged-away symbol has size 0.
type symbol struct {
	id         uint32
	prev, next int32
	size       int32
}

// mergeCand is a possible merge of the symbol at pos with its successor.
type mergeCand struct {
	rank, id uint32
	pos      int32
}

func (a mergeCand) less(b mergeCand) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// bpeScratch holds the buffers of one word's merge, reused through a pool.
type bpeScratch struct {
	syms []symbol
	heap []mergeCand
}

var bpeScratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

// encode appends the ids of one pre-tokenized word (already in the model's
// alphabet, i.e. byte-level characters for byte-level models).
func (m *bpeModel) encode(dst []uint32, word []byte) []uint32 {
	if len(word) == 0 {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[string(word)]; ok {
			return append(dst, id)
		}
	}
	cacheable := len(word) < maxCachedWord
	if cacheable {
		if ids, ok := m.cache.get(word); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	dst = m.merge(dst, word)
	if cacheable {
		m.cache.put(word, slices.Clone(dst[start:]))
	}
	return dst
}

// merge is `tokenizers`' Word::merge_all: start from one symbol per
// character, then repeatedly apply the lowest-ranked merge among adjacent
// pairs, leftmost first among equal ranks, using a priority queue whose
// stale entries are skipped.
func (m *bpeModel) merge(dst []uint32, word []byte) []uint32 {
	sc := bpeScratchPool.Get().(*bpeScratch)
	defer bpeScratchPool.Put(sc)
	syms := sc.syms[:0]

	// Characters not in the vocabulary become the unknown token (runs of
	// them fused into one when fuse_unk) or, with no unknown token, vanish.
	unkSize := int32(0)
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRune(word[i:])
		if id, ok := m.vocab[string(word[i:i+n])]; ok {
			if unkSize > 0 {
				syms = append(syms, symbol{id: m.unkID, size: unkSize})
				unkSize = 0
			}
			syms = append(syms, symbol{id: id, size: int32(n)})
		} else if m.hasUnk {
			if unkSize > 0 && !m.fuseUnk {
				syms = append(syms, symbol{id: m.unkID, size: unkSize})
				unkSize = 0
			}
			unkSize += int32(n)
		}
		i += n
	}
	if unkSize > 0 {
		syms = append(syms, symbol{id: m.unkID, size: unkSize})
	}
	for i := range syms {
		syms[i].prev = int32(i) - 1
		syms[i].next = int32(i) + 1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}

	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if r, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = heapPush(h, mergeCand{rank: r.rank, id: r.id, pos: int32(i)})
		}
	}
	for len(h) > 0 {
		var top mergeCand
		top, h = heapPop(h)
		cur := &syms[top.pos]
		if cur.size == 0 || cur.next < 0 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		// The entry is stale unless this pair still merges into the same
		// token.
		if r, ok := m.merges[pairKey(cur.id, right.id)]; !ok || r.id != top.id {
			continue
		}
		cur.id = top.id
		cur.size += right.size
		cur.next = right.next
		syms[nextPos].size = 0
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if r, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h = heapPush(h, mergeCand{rank: r.rank, id: r.id, pos: cur.prev})
			}
		}
		if cur.next >= 0 {
			if r, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h = heapPush(h, mergeCand{rank: r.rank, id: r.id, pos: top.pos})
			}
		}
	}
	for _, s := range syms {
		if s.size != 0 {
			dst = append(dst, s.id)
		}
	}
	sc.syms, sc.heap = syms, h
	return dst
}

func heapPush(h []mergeCand, c mergeCand) []mergeCand {
	h = append(h, c)
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h[i].less(h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

func heapPop(h []mergeCand) (mergeCand, []mergeCand) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[small]) {
			small = l
		}
		if r < len(h) && h[r].less(h[small]) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	return top, h
}

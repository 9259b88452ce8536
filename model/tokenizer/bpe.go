package tokenizer

import (
	"slices"
	"sync"
	"unicode/utf8"
)

// bpeModel is `tokenizers`' BPE model without dropout or subword
// prefixes/suffixes (those are load errors), or, when scoreRank is set,
// SentencePiece's BPE as llama.cpp runs it for GGUF vocabularies.
type bpeModel struct {
	vocab        map[string]uint32
	merges       map[uint64]mergeRule // key: left id << 32 | right id
	ignoreMerges bool                 // a word that is itself in the vocabulary is one token
	hasUnk       bool
	unkID        uint32
	fuseUnk      bool
	// byteFallback: a character not in the vocabulary becomes the tokens
	// <0xNN> of its UTF-8 bytes (when all of them exist) instead of unk.
	byteFallback bool
	byteIDs      [256]uint32 // the id of <0xNN>, when byteKnown
	byteKnown    [256]bool
	// scoreRank, when not nil, replaces merges: any two adjacent symbols
	// whose concatenation is in the vocabulary may merge, the token with
	// the highest score first (scoreRank[id] is 0 for the highest score;
	// equal scores share a rank), leftmost among equals. This is
	// llama.cpp's llm_tokenizer_spm: a character outside the vocabulary
	// stays a symbol that can still merge, and becomes its bytes' tokens
	// only if it is left alone.
	scoreRank []uint32
	cache     wordCache
}

// noID marks a symbol that is not (yet) a token: a character outside the
// vocabulary in score mode.
const noID = ^uint32(0)

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
	id          uint32
	prev, next  int32
	start, size int32 // bytes of the word it covers
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

// merge is `tokenizers`' Word::merge_all (or, in score mode, llama.cpp's
// SentencePiece merge): start from one symbol per character, then
// repeatedly apply the best merge among adjacent pairs, leftmost first among
// equals, using a priority queue whose stale entries are skipped.
func (m *bpeModel) merge(dst []uint32, word []byte) []uint32 {
	sc := bpeScratchPool.Get().(*bpeScratch)
	defer bpeScratchPool.Put(sc)
	syms := m.initialSymbols(sc.syms[:0], word)
	for i := range syms {
		syms[i].prev = int32(i) - 1
		syms[i].next = int32(i) + 1
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}

	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if r, ok := m.pair(word, &syms[i], &syms[i+1]); ok {
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
		if r, ok := m.pair(word, cur, &right); !ok || r.id != top.id {
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
			if r, ok := m.pair(word, &syms[cur.prev], cur); ok {
				h = heapPush(h, mergeCand{rank: r.rank, id: r.id, pos: cur.prev})
			}
		}
		if cur.next >= 0 {
			if r, ok := m.pair(word, cur, &syms[cur.next]); ok {
				h = heapPush(h, mergeCand{rank: r.rank, id: r.id, pos: top.pos})
			}
		}
	}
	for _, s := range syms {
		switch {
		case s.size == 0:
		case s.id != noID:
			dst = append(dst, s.id)
		default:
			// A character left alone in score mode: its bytes, as
			// llama.cpp's resegment does.
			dst = m.appendBytes(dst, word[s.start:s.start+s.size])
		}
	}
	sc.syms, sc.heap = syms, h
	return dst
}

// initialSymbols is one symbol per character of word, as `tokenizers`'
// BPE::merge_word builds them: a character outside the vocabulary becomes
// its byte tokens with byte fallback, else the unknown token (runs of them
// fused into one when fuse_unk), else nothing. In score mode it stays a
// symbol of its own (noID).
func (m *bpeModel) initialSymbols(syms []symbol, word []byte) []symbol {
	unkStart, unkSize := int32(0), int32(0)
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRune(word[i:])
		start := int32(i)
		i += n
		if id, ok := m.vocab[string(word[start:i])]; ok {
			if unkSize > 0 {
				syms = append(syms, symbol{id: m.unkID, start: unkStart, size: unkSize})
				unkSize = 0
			}
			syms = append(syms, symbol{id: id, start: start, size: int32(n)})
			continue
		}
		if m.scoreRank != nil {
			syms = append(syms, symbol{id: noID, start: start, size: int32(n)})
			continue
		}
		if m.byteFallback && m.allBytesKnown(word[start:i]) {
			// `tokenizers` adds the byte tokens without first adding a
			// pending unknown token, which therefore follows them.
			for j := start; j < int32(i); j++ {
				syms = append(syms, symbol{id: m.byteIDs[word[j]], start: j, size: 1})
			}
			continue
		}
		if m.hasUnk {
			if unkSize > 0 && !m.fuseUnk {
				syms = append(syms, symbol{id: m.unkID, start: unkStart, size: unkSize})
				unkSize = 0
			}
			if unkSize == 0 {
				unkStart = start
			}
			unkSize += int32(n)
		}
	}
	if unkSize > 0 {
		syms = append(syms, symbol{id: m.unkID, start: unkStart, size: unkSize})
	}
	return syms
}

func (m *bpeModel) allBytesKnown(b []byte) bool {
	for _, c := range b {
		if !m.byteKnown[c] {
			return false
		}
	}
	return true
}

// appendBytes appends the byte tokens of b; a byte with no token becomes the
// unknown token, or nothing without one.
func (m *bpeModel) appendBytes(dst []uint32, b []byte) []uint32 {
	for _, c := range b {
		switch {
		case m.byteKnown[c]:
			dst = append(dst, m.byteIDs[c])
		case m.hasUnk:
			dst = append(dst, m.unkID)
		}
	}
	return dst
}

// pair is the merge of adjacent symbols a and b, if there is one.
func (m *bpeModel) pair(word []byte, a, b *symbol) (mergeRule, bool) {
	if m.scoreRank == nil {
		r, ok := m.merges[pairKey(a.id, b.id)]
		return r, ok
	}
	id, ok := m.vocab[string(word[a.start:a.start+a.size+b.size])]
	if !ok {
		return mergeRule{}, false
	}
	return mergeRule{rank: m.scoreRank[id], id: id}, true
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

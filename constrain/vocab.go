package constrain

import (
	"errors"
	"fmt"
	"slices"
)

// ErrTooAmbiguous: more than MaxAlternatives readings of the schema fit
// the text at once (anyOf alternatives that overlap, nested).
var ErrTooAmbiguous = errors.New("more alternatives of the schema's anyOf fit the text at once than the recognizer follows")

// Vocab is a tokenizer's vocabulary compiled into byte tries: each node a
// prefix, with the tokens whose bytes are exactly that prefix. Tokens of
// plain string text (printable ASCII but the quote and the backslash),
// which leave a free string as it is, are also kept as a bitset, and the
// others in a trie of their own: inside such a string the mask is that
// bitset and a walk of the smaller trie. A Vocab is immutable and shared
// by every Matcher of a model.
type Vocab struct {
	depth  int // the longest token's length
	all    trie
	rest   trie     // the tokens that are not plain
	plain  []uint64 // the plain tokens
	nPlain int
	bytes  [][]byte
}

type trie struct {
	nodes []vnode
	edges []vedge
	ids   []uint32
}

type vnode struct {
	edge, nEdge int32 // its edges: edges[edge : edge+nEdge], by byte
	id, nID     int32 // its tokens: ids[id : id+nID]
}

type vedge struct {
	c     byte
	child int32
}

// NewVocab compiles tokens (token id → the bytes it adds to the text).
// A token with no bytes (a special token, an unused id) is never allowed.
func NewVocab(tokens [][]byte) *Vocab {
	v := &Vocab{bytes: tokens, plain: make([]uint64, (len(tokens)+63)/64)}
	var rest [][]byte = make([][]byte, len(tokens))
	for id, b := range tokens {
		v.depth = max(v.depth, len(b))
		if len(b) > 0 && plainText(b) {
			v.plain[id/64] |= 1 << (id % 64)
			v.nPlain++
		} else {
			rest[id] = b
		}
	}
	v.all = newTrie(tokens)
	v.rest = newTrie(rest)
	return v
}

func plainText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func newTrie(tokens [][]byte) trie {
	type build struct {
		next map[byte]int
		ids  []uint32
	}
	tmp := []build{{next: map[byte]int{}}}
	for id, b := range tokens {
		if len(b) == 0 {
			continue
		}
		n := 0
		for _, c := range b {
			nx, ok := tmp[n].next[c]
			if !ok {
				nx = len(tmp)
				tmp = append(tmp, build{next: map[byte]int{}})
				tmp[n].next[c] = nx
			}
			n = nx
		}
		tmp[n].ids = append(tmp[n].ids, uint32(id))
	}
	t := trie{nodes: make([]vnode, len(tmp))}
	for i, b := range tmp {
		cs := make([]byte, 0, len(b.next))
		for c := range b.next {
			cs = append(cs, c)
		}
		slices.Sort(cs)
		t.nodes[i] = vnode{edge: int32(len(t.edges)), nEdge: int32(len(cs)), id: int32(len(t.ids)), nID: int32(len(b.ids))}
		for _, c := range cs {
			t.edges = append(t.edges, vedge{c, int32(b.next[c])})
		}
		t.ids = append(t.ids, b.ids...)
	}
	return t
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return len(v.bytes) }

// Matcher follows one generation under a grammar. It is used by one
// goroutine at a time.
type Matcher struct {
	g       *Grammar
	v       *Vocab
	st      State
	next    State
	levels  []*State // the trie walk's state at each depth
	pool    []State
	scratch []frame
}

// NewMatcher starts a generation of g's values over v's tokens.
func (g *Grammar) NewMatcher(v *Vocab) *Matcher {
	return &Matcher{g: g, v: v, st: g.start()}
}

// Accept advances the matcher by token id; an error if the token is not
// one Mask allows (the matcher is then unchanged).
func (m *Matcher) Accept(id uint32) error {
	if int(id) >= len(m.v.bytes) || len(m.v.bytes[id]) == 0 {
		return fmt.Errorf("constrain: token %d has no bytes in the vocabulary", id)
	}
	cur := m.st
	var nx State
	for _, c := range m.v.bytes[id] {
		m.scratch = advance(&cur, int(c), &nx, m.scratch)
		if nx.overflow {
			return fmt.Errorf("constrain: token %d (%q): %w", id, m.v.bytes[id], ErrTooAmbiguous)
		}
		if nx.empty() {
			return fmt.Errorf("constrain: token %d (%q) does not continue the value", id, m.v.bytes[id])
		}
		cur, nx = nx, State{}
	}
	m.st = cur
	return nil
}

// CanEnd reports whether the text so far is a complete value: end of
// sequence is allowed.
func (m *Matcher) CanEnd() bool { return m.st.canEnd(&m.scratch) }

// Mask sets, in allowed (a bitset of at least Size bits, cleared by the
// caller), the tokens that keep the text a prefix of a value, and returns
// how many it set.
func (m *Matcher) Mask(allowed []uint64) int {
	if len(m.levels) == 0 { // sized once: levels point into pool
		m.levels = make([]*State, m.v.depth+1)
		m.pool = make([]State, m.v.depth+1)
	}
	m.levels[0] = &m.st
	if unchanged(&m.st, 'a') { // in a free string: every plain token, and the others walked
		for i, w := range m.v.plain {
			allowed[i] |= w
		}
		return m.v.nPlain + m.walk(&m.v.rest, 0, 0, allowed)
	}
	return m.walk(&m.v.all, 0, 0, allowed)
}

// walk visits the children of trie node ni, whose prefix leaves the
// recognizer in m.levels[depth].
func (m *Matcher) walk(t *trie, ni int32, depth int, allowed []uint64) int {
	count := 0
	n := t.nodes[ni]
	src := m.levels[depth]
	for _, e := range t.edges[n.edge : n.edge+n.nEdge] {
		dst := &m.pool[depth]
		if unchanged(src, e.c) {
			dst = src // inside a string, a plain byte changes nothing
		} else {
			m.scratch = advance(src, int(e.c), dst, m.scratch)
			if dst.empty() {
				continue
			}
		}
		c := t.nodes[e.child]
		for _, id := range t.ids[c.id : c.id+c.nID] {
			allowed[id/64] |= 1 << (id % 64)
		}
		count += int(c.nID)
		if c.nEdge > 0 {
			m.levels[depth+1] = dst
			count += m.walk(t, e.child, depth+1, allowed)
		}
	}
	return count
}

// unchanged reports whether byte c leaves st as it is: one stack, in the
// middle of a string that is no object key and has no length bounds, and
// c a printable ASCII byte other than the quote and the backslash.
func unchanged(st *State, c byte) bool {
	if len(st.ends) != 1 || c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
		return false
	}
	top := &st.frames[len(st.frames)-1]
	return top.k == fString && top.st == sNormal && !top.key && top.n.minLen == 0 && top.n.maxLen < 0
}

package constrain

import (
	"fmt"
	"slices"
)

// Vocab is a tokenizer's vocabulary compiled into a byte trie: each node
// a prefix, with the tokens whose bytes are exactly that prefix. It is
// immutable and shared by every Matcher of a model.
type Vocab struct {
	depth int // the longest token's length
	nodes []vnode
	edges []vedge
	ids   []uint32
	bytes [][]byte
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
	type build struct {
		next map[byte]int
		ids  []uint32
	}
	tmp := []build{{next: map[byte]int{}}}
	v := &Vocab{bytes: tokens}
	for id, b := range tokens {
		if len(b) == 0 {
			continue
		}
		v.depth = max(v.depth, len(b))
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
	v.nodes = make([]vnode, len(tmp))
	for i, b := range tmp {
		cs := make([]byte, 0, len(b.next))
		for c := range b.next {
			cs = append(cs, c)
		}
		slices.Sort(cs)
		v.nodes[i] = vnode{edge: int32(len(v.edges)), nEdge: int32(len(cs)), id: int32(len(v.ids)), nID: int32(len(b.ids))}
		for _, c := range cs {
			v.edges = append(v.edges, vedge{c, int32(b.next[c])})
		}
		v.ids = append(v.ids, b.ids...)
	}
	return v
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
	return m.walk(0, 0, allowed)
}

// walk visits the children of trie node ni, whose prefix leaves the
// recognizer in m.levels[depth].
func (m *Matcher) walk(ni int32, depth int, allowed []uint64) int {
	count := 0
	n := m.v.nodes[ni]
	src := m.levels[depth]
	for _, e := range m.v.edges[n.edge : n.edge+n.nEdge] {
		dst := &m.pool[depth]
		if unchanged(src, e.c) {
			dst = src // inside a string, a plain byte changes nothing
		} else {
			m.scratch = advance(src, int(e.c), dst, m.scratch)
			if dst.empty() {
				continue
			}
		}
		c := m.v.nodes[e.child]
		for _, id := range m.v.ids[c.id : c.id+c.nID] {
			allowed[id/64] |= 1 << (id % 64)
		}
		count += int(c.nID)
		if c.nEdge > 0 {
			m.levels[depth+1] = dst
			count += m.walk(e.child, depth+1, allowed)
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

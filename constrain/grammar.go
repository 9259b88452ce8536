package constrain

import "math/big"

// MaxIndent bounds the whitespace between JSON tokens, which is none, one
// space, or a newline and at most MaxIndent spaces or tabs (llama.cpp's
// JSON grammars' rule): enough to pretty-print a few levels deep, too
// little to loop in.
const MaxIndent = 20

// A Grammar is the set of JSON texts a request accepts. It is immutable
// and may be shared by many Matchers.
type Grammar struct {
	root *node
}

// kind is what a node accepts.
type kind uint8

const (
	kPending kind = iota // a $ref being compiled; never left in a Grammar
	kAny                 // any JSON value
	kObject
	kArray
	kString
	kNumber
	kLit   // one of a set of serializations (enum, const, boolean, null)
	kAnyOf // any of alts
)

// node is a compiled schema.
type node struct {
	kind kind

	// kObject: keys is the trie of the properties' serialized names
	// (quotes included), whose ends carry the property's index; required
	// and seen sets are bitmasks of those indices.
	props      []*node
	keys       *lit
	required   uint64
	additional *node // the schema of other keys' values; nil: none allowed

	// kString: the length in characters (code points); maxLen < 0 is
	// no bound.
	minLen, maxLen int

	// kArray
	items              *node
	minItems, maxItems int // maxItems < 0: no bound

	// kNumber
	integer bool
	bounds  *bounds // nil: none

	// kLit
	lit *lit

	// kAnyOf
	alts []*node
}

// bounds are a number's minimum and maximum, exact; a nil end is open.
type bounds struct {
	lo, hi         *big.Rat
	loExcl, hiExcl bool
}

// lit is a byte trie of serializations.
type lit struct {
	next []litEdge
	end  bool
	idx  int    // at an end: the property index (keys) or 0
	all  uint64 // keys: the indices of the ends at or below this node
}

type litEdge struct {
	c byte
	n *lit
}

func (l *lit) child(c byte) *lit {
	for _, e := range l.next {
		if e.c == c {
			return e.n
		}
	}
	return nil
}

func (l *lit) add(s []byte, idx int) {
	n := l
	n.all |= 1 << uint(idx&63)
	for _, c := range s {
		nx := n.child(c)
		if nx == nil {
			nx = &lit{}
			n.next = append(n.next, litEdge{c, nx})
		}
		n = nx
		n.all |= 1 << uint(idx&63)
	}
	n.end, n.idx = true, idx
}

var (
	anyNode    = &node{kind: kAny}
	anyObject  = &node{kind: kObject, keys: &lit{}, additional: anyNode}
	anyArray   = &node{kind: kArray, items: anyNode, maxItems: -1}
	stringNode = &node{kind: kString, maxLen: -1}
	numberNode = &node{kind: kNumber}
	wordsNode  = &node{kind: kLit, lit: words()}
)

// words is the trie of true, false and null.
func words() *lit {
	l := &lit{}
	for _, w := range []string{"true", "false", "null"} {
		l.add([]byte(w), 0)
	}
	return l
}

// JSONObject is the grammar of any JSON object (response_format
// json_object).
func JSONObject() *Grammar { return &Grammar{root: anyObject} }

// Accepts reports whether text is a complete value of the grammar, as the
// recognizer sees it (whitespace bound included).
func (g *Grammar) Accepts(text []byte) bool {
	st := g.start()
	var next State
	var scratch []frame
	for _, c := range text {
		scratch = advance(&st, int(c), &next, scratch)
		if next.empty() {
			return false
		}
		st, next = next, st
	}
	return st.canEnd(&scratch)
}

package constrain

// The recognizer is a pushdown automaton over bytes. A stack is a slice
// of frames, the bottom one the document; a State is the set of stacks
// still alive (anyOf keeps one per alternative that fits the text so far).

const eof = 256 // the end of the text, fed as a byte

type fkind uint8

const (
	fDoc    fkind = iota // bottom: st 0 before the value, 1 after it
	fValue               // a value of n, after optional whitespace
	fObject              // st: oOpen ...
	fArray
	fString
	fNumber
	fLit
)

// Object and array states.
const (
	oOpen  = iota // after '{'
	oKey          // a key frame is above
	oColon        // after a key
	oValue        // a value frame is above
	oAfter        // after a value
	oComma        // after ','
)

const (
	aOpen  = iota // after '['
	aValue        // a value frame is above
	aAfter        // after a value
)

// String states.
const (
	sNormal = iota
	sEscape
	sHex
	sUTF8
)

// Number states.
const (
	nMinus = iota
	nZero
	nInt
	nDot
	nFrac
	nExp
	nExpSign
	nExpDigits
)

// maxNumber is the longest number a bounded number frame holds.
const maxNumber = 40

type frame struct {
	k    fkind
	st   uint8
	ws   uint8 // whitespace bytes in a row
	key  bool  // fString, fLit: an object key
	aux  uint8 // fString: hex digits or UTF-8 bytes still due
	lo   byte  // fString sUTF8: the next byte's range
	hi   byte
	n    *node
	l    *lit   // fLit: the position; fString key: the position in the keys, or nil
	cnt  int32  // fArray: items; fObject: the current key's property (-1: other); fString: characters
	seen uint64 // fObject: properties present
	num  *numBuf
	// A key that is no property is told from the others by a 64-bit hash
	// of its bytes (a collision would refuse a new key, never allow a
	// repeated one): h is a key string's so far, other an object's keys.
	h     uint64
	other *keyHash
}

// keyHash is a list of key hashes, shared by the frames that copy it.
type keyHash struct {
	h    uint64
	next *keyHash
}

func (k *keyHash) has(h uint64) bool {
	for ; k != nil; k = k.next {
		if k.h == h {
			return true
		}
	}
	return false
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// numBuf is a bounded number's text so far and whether it is within the
// bounds as it stands. Frames share it until they change it (copy on
// write), so copying a frame stays cheap.
type numBuf struct {
	b  []byte
	in bool
}

// State is the recognizer's state: the stacks alive after some text.
type State struct {
	frames []frame
	ends   []int
	// overflow: more than MaxAlternatives stacks fit the text; the state
	// is then empty (see MaxAlternatives).
	overflow bool
}

// MaxAlternatives bounds the stacks alive at once: anyOf alternatives that
// overlap (two object schemas that both fit `{"a":`) each keep a stack
// until the text tells them apart, and nested ones multiply. A text that
// more would fit is refused (Matcher.Accept's ErrTooAmbiguous), so that a
// schema cannot make a step's mask cost grow without bound.
const MaxAlternatives = 32

func (st *State) empty() bool { return len(st.ends) == 0 }

func (st *State) reset() { st.frames, st.ends, st.overflow = st.frames[:0], st.ends[:0], false }

func (st *State) stack(i int) []frame {
	from := 0
	if i > 0 {
		from = st.ends[i-1]
	}
	return st.frames[from:st.ends[i]]
}

// push adds s unless an equal stack is there already (overlapping anyOf
// alternatives that reconverge).
func (st *State) push(s []frame) {
	for i := range st.ends {
		if equalStacks(st.stack(i), s) {
			return
		}
	}
	if len(st.ends) == MaxAlternatives {
		st.overflow = true
		return
	}
	st.frames = append(st.frames, s...)
	st.ends = append(st.ends, len(st.frames))
}

func equalStacks(a, b []frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.num != nil && y.num != nil && string(x.num.b) == string(y.num.b) {
			y.num = x.num
		}
		if x != y {
			return false
		}
	}
	return true
}

func (st *State) copyFrom(o *State) {
	st.frames = append(st.frames[:0], o.frames...)
	st.ends = append(st.ends[:0], o.ends...)
}

func (g *Grammar) start() State {
	var st State
	// The value starts at once: no whitespace before it (or after it).
	st.push([]frame{{k: fDoc}, {k: fValue, n: g.root, ws: wsSpace}})
	return st
}

// advance feeds c to every stack of src, writing the survivors to dst; it
// returns the scratch buffer for reuse.
func advance(src *State, c int, dst *State, scratch []frame) []frame {
	dst.reset()
	for i := range src.ends {
		scratch = append(scratch[:0], src.stack(i)...)
		step(scratch, c, dst, 0)
	}
	if dst.overflow {
		dst.frames, dst.ends = dst.frames[:0], dst.ends[:0]
	}
	return scratch
}

// canEnd reports whether the text may end here.
func (st *State) canEnd(scratch *[]frame) bool {
	var out State
	for i := range st.ends {
		*scratch = append((*scratch)[:0], st.stack(i)...)
		if step(*scratch, eof, &out, 0) {
			return true
		}
	}
	return false
}

// A frame's ws is where it stands in the whitespace of a gap: none yet,
// after its one space, or after a newline and ws-wsNewline indent bytes.
const (
	wsNone = iota
	wsSpace
	wsNewline
)

// wsStep takes whitespace byte c into a gap, as llama.cpp's JSON grammars
// allow it: one space, or a newline and up to MaxIndent spaces or tabs.
func wsStep(ws *uint8, c int) bool {
	switch {
	case *ws == wsNone && c == ' ':
		*ws = wsSpace
	case *ws == wsNone && c == '\n':
		*ws = wsNewline
	case *ws >= wsNewline && (c == ' ' || c == '\t') && *ws-wsNewline < MaxIndent:
		*ws++
	default:
		return false
	}
	return true
}

func isWS(c int) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func isDigit(c int) bool { return c >= '0' && c <= '9' }

// maxAnyOfDepth bounds anyOf alternatives opened within one byte: an anyOf
// that reaches itself through $ref without consuming a byte is cut there.
const maxAnyOfDepth = 32

// step feeds c to the stack s (which it may change), pushing the stacks
// that accept it onto out; it reports, for c == eof, whether s may end.
func step(s []frame, c int, out *State, depth int) bool {
	for {
		top := &s[len(s)-1]
		switch top.k {
		case fDoc:
			if top.st == 1 && c == eof {
				return true
			}
			return false

		case fValue:
			if isWS(c) {
				if !wsStep(&top.ws, c) {
					return false
				}
				out.push(s)
				return false
			}
			if c == eof {
				return false
			}
			n := top.n
			if n.kind == kAnyOf {
				if depth >= maxAnyOfDepth {
					return false
				}
				for _, a := range n.alts {
					s2 := append([]frame(nil), s...)
					s2[len(s2)-1] = frame{k: fValue, n: a, ws: top.ws}
					step(s2, c, out, depth+1)
				}
				return false
			}
			f, ok := open(n, c)
			if !ok {
				return false
			}
			s[len(s)-1] = f
			if f.k == fLit && len(f.l.next) == 0 { // a one-byte literal
				s = s[:len(s)-1]
				if !childDone(s, 0) {
					return false
				}
			}
			out.push(s)
			return false

		case fObject:
			n := top.n
			if isWS(c) && top.st != oKey && top.st != oValue {
				if !wsStep(&top.ws, c) {
					return false
				}
				out.push(s)
				return false
			}
			top.ws = 0
			switch top.st {
			case oOpen, oComma:
				switch {
				case c == '"':
					if !moreKeys(n, top.seen) {
						return false
					}
					top.st = oKey
					if n.additional == nil {
						l := n.keys.child('"')
						s = append(s, frame{k: fLit, key: true, l: l})
					} else {
						s = append(s, frame{k: fString, key: true, l: n.keys.child('"'), h: fnvOffset})
					}
					out.push(s)
					return false
				case c == '}' && top.st == oOpen && n.required&^top.seen == 0:
					return pop(s, out)
				}
				return false
			case oColon:
				if c != ':' {
					return false
				}
				top.st = oValue
				v := n.additional
				if top.cnt >= 0 {
					v = n.props[top.cnt]
				}
				s = append(s, frame{k: fValue, n: v})
				out.push(s)
				return false
			case oAfter:
				switch {
				case c == ',' && moreKeys(n, top.seen):
					top.st = oComma
					out.push(s)
				case c == '}' && n.required&^top.seen == 0:
					return pop(s, out)
				}
				return false
			}
			return false

		case fArray:
			n := top.n
			if isWS(c) {
				if !wsStep(&top.ws, c) {
					return false
				}
				out.push(s)
				return false
			}
			top.ws = 0
			switch top.st {
			case aOpen:
				if c == ']' {
					if n.minItems > 0 {
						return false
					}
					return pop(s, out)
				}
				if n.maxItems == 0 {
					return false
				}
				top.st = aValue
				s = append(s, frame{k: fValue, n: n.items})
				continue // the value frame takes c
			case aAfter:
				switch {
				case c == ',' && (n.maxItems < 0 || int(top.cnt) < n.maxItems):
					top.st = aValue
					s = append(s, frame{k: fValue, n: n.items})
					out.push(s)
				case c == ']' && int(top.cnt) >= n.minItems:
					return pop(s, out)
				}
				return false
			}
			return false

		case fString:
			closing := top.st == sNormal && c == '"'
			if !stringByte(top, c, s) {
				return false
			}
			if closing {
				idx := -1
				if top.key && top.l != nil {
					if e := top.l.child('"'); e != nil && e.end {
						idx = e.idx
					}
				}
				if top.key && idx < 0 {
					obj := &s[len(s)-2]
					if obj.other.has(top.h) {
						return false // a key twice
					}
					obj.other = &keyHash{top.h, obj.other}
				}
				s = s[:len(s)-1]
				if !childDone(s, idx) {
					return false
				}
				out.push(s)
				return false
			}
			out.push(s)
			return false

		case fLit:
			if c != eof {
				if nx := top.l.child(byte(c)); nx != nil {
					if top.key && nx.all&^s[len(s)-2].seen == 0 {
						return false // only keys already present lie below
					}
					top.l = nx
					if nx.end && len(nx.next) == 0 { // self-delimited: done
						idx := nx.idx
						s = s[:len(s)-1]
						if !childDone(s, idx) {
							return false
						}
					}
					out.push(s)
					return false
				}
			}
			if !top.l.end { // a number literal that could end here does
				return false
			}
			idx := top.l.idx
			s = s[:len(s)-1]
			if !childDone(s, idx) {
				return false
			}
			continue // the parent takes c

		case fNumber:
			ok, ended := numberByte(top, c)
			if !ok {
				return false
			}
			if !ended {
				out.push(s)
				return false
			}
			s = s[:len(s)-1]
			if !childDone(s, 0) {
				return false
			}
			continue
		}
		return false
	}
}

// pop ends the top frame (a closed object or array) and pushes the stack.
func pop(s []frame, out *State) bool {
	s = s[:len(s)-1]
	if childDone(s, 0) {
		out.push(s)
	}
	return false
}

// moreKeys reports whether another key may follow in an object of n that
// has the keys seen.
func moreKeys(n *node, seen uint64) bool {
	return n.additional != nil || n.keys.all&^seen != 0
}

// childDone tells the frame now on top of s that the value (or key, with
// its property index idx) above it is complete; false if it may not be.
func childDone(s []frame, idx int) bool {
	top := &s[len(s)-1]
	switch top.k {
	case fDoc:
		top.st = 1
	case fObject:
		switch top.st {
		case oKey:
			if idx >= 0 {
				if top.seen&(1<<uint(idx)) != 0 {
					return false // a property twice
				}
				top.seen |= 1 << uint(idx)
			}
			top.cnt = int32(idx)
			top.st = oColon
		case oValue:
			top.st = oAfter
		}
	case fArray:
		top.cnt++
		top.st = aAfter
	}
	return true
}

// open starts a value of n at its first byte c.
func open(n *node, c int) (frame, bool) {
	switch n.kind {
	case kAny:
		switch {
		case c == '{':
			return open(anyObject, c)
		case c == '[':
			return open(anyArray, c)
		case c == '"':
			return open(stringNode, c)
		case c == '-' || isDigit(c):
			return open(numberNode, c)
		default:
			return open(wordsNode, c)
		}
	case kObject:
		if c == '{' {
			return frame{k: fObject, n: n, st: oOpen}, true
		}
	case kArray:
		if c == '[' {
			return frame{k: fArray, n: n, st: aOpen}, true
		}
	case kString:
		if c == '"' {
			return frame{k: fString, n: n}, true
		}
	case kNumber:
		f := frame{k: fNumber, n: n}
		if n.bounds != nil {
			f.num = &numBuf{}
		}
		switch {
		case c == '-':
			f.st = nMinus
		case c == '0':
			f.st = nZero
		case c >= '1' && c <= '9':
			f.st = nInt
		default:
			return f, false
		}
		if f.num != nil {
			f.num = &numBuf{b: []byte{byte(c)}}
			f.num.in = c != '-' && inBounds(n.bounds, f.num.b)
			if !viable(f.n, f.num.b, f.st) {
				return f, false
			}
		}
		return f, true
	case kLit:
		if nx := n.lit.child(byte(c)); nx != nil && c != eof {
			return frame{k: fLit, n: n, l: nx}, true
		}
	}
	return frame{}, false
}

// stringByte feeds c to a string frame (after its opening quote); the
// closing quote is left in sNormal for the caller to see.
func stringByte(f *frame, c int, s []frame) bool {
	if c == eof {
		return false
	}
	if f.key && !(f.st == sNormal && c == '"') {
		f.h = (f.h ^ uint64(c)) * fnvPrime
		if f.l != nil {
			f.l = f.l.child(byte(c))
		}
	}
	switch f.st {
	case sNormal:
		if c != '"' && (c >= 0x20 && c < 0x80 || c >= 0xC2 && c <= 0xF4) { // a character starts
			f.cnt++
			if f.n != nil && f.n.maxLen >= 0 && int(f.cnt) > f.n.maxLen {
				return false
			}
		}
		switch {
		case c == '"':
			if f.n != nil && int(f.cnt) < f.n.minLen {
				return false
			}
			if f.key && f.l != nil {
				// A known property's name again is a duplicate.
				if e := f.l.child('"'); e != nil && e.end && s[len(s)-2].seen&(1<<uint(e.idx)) != 0 {
					return false
				}
			}
			return true
		case c == '\\':
			f.st = sEscape
		case c < 0x20:
			return false
		case c < 0x80:
		case c >= 0xC2 && c <= 0xDF:
			f.st, f.aux, f.lo, f.hi = sUTF8, 1, 0x80, 0xBF
		case c == 0xE0:
			f.st, f.aux, f.lo, f.hi = sUTF8, 2, 0xA0, 0xBF
		case c == 0xED:
			f.st, f.aux, f.lo, f.hi = sUTF8, 2, 0x80, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			f.st, f.aux, f.lo, f.hi = sUTF8, 2, 0x80, 0xBF
		case c == 0xF0:
			f.st, f.aux, f.lo, f.hi = sUTF8, 3, 0x90, 0xBF
		case c >= 0xF1 && c <= 0xF3:
			f.st, f.aux, f.lo, f.hi = sUTF8, 3, 0x80, 0xBF
		case c == 0xF4:
			f.st, f.aux, f.lo, f.hi = sUTF8, 3, 0x80, 0x8F
		default:
			return false
		}
	case sEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.st = sNormal
		case 'u':
			f.st, f.aux, f.lo = sHex, 0, 0
		default:
			return false
		}
	case sHex:
		if !isDigit(c) && !(c >= 'a' && c <= 'f') && !(c >= 'A' && c <= 'F') {
			return false
		}
		// No surrogates (\uD800-\uDFFF): each escape is then one code
		// point, and a character outside the BMP is written as UTF-8.
		if f.aux == 0 && (c == 'd' || c == 'D') {
			f.lo = 1
		} else if f.aux == 1 && f.lo == 1 && !(c >= '0' && c <= '7') {
			return false
		}
		f.aux++
		if f.aux == 4 {
			f.st = sNormal
		}
	case sUTF8:
		if c < int(f.lo) || c > int(f.hi) {
			return false
		}
		f.aux--
		f.lo, f.hi = 0x80, 0xBF
		if f.aux == 0 {
			f.st = sNormal
		}
	}
	return true
}

// numberByte feeds c to a number frame: ok if the number takes it or
// ends before it (ended: c belongs to what follows).
func numberByte(f *frame, c int) (ok, ended bool) {
	canEnd := f.st == nZero || f.st == nInt || f.st == nFrac || f.st == nExpDigits
	next := -1
	noFrac := f.n.integer
	noExp := f.n.integer || f.n.bounds != nil
	switch {
	case isDigit(c):
		switch f.st {
		case nMinus:
			next = nInt
			if c == '0' {
				next = nZero
			}
		case nInt, nFrac, nExpDigits:
			next = int(f.st)
		case nDot:
			next = nFrac
		case nExp, nExpSign:
			next = nExpDigits
		}
	case c == '.' && !noFrac && (f.st == nZero || f.st == nInt):
		next = nDot
	case (c == 'e' || c == 'E') && !noExp && (f.st == nZero || f.st == nInt || f.st == nFrac):
		next = nExp
	case (c == '+' || c == '-') && f.st == nExp:
		next = nExpSign
	}
	if next < 0 {
		if !canEnd {
			return false, false
		}
		if f.num != nil && !f.num.in {
			return false, false
		}
		return true, true
	}
	if f.num != nil {
		if len(f.num.b) >= maxNumber {
			return false, false
		}
		b := make([]byte, len(f.num.b)+1, len(f.num.b)+8)
		copy(b, f.num.b)
		b[len(b)-1] = byte(c)
		if !viable(f.n, b, uint8(next)) {
			return false, false
		}
		f.num = &numBuf{b: b, in: inBounds(f.n.bounds, b)}
	}
	f.st = uint8(next)
	return true, false
}

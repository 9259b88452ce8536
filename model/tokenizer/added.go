package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	content    string
	singleWord bool // only matches when not inside a word
	lstrip     bool // also takes the whitespace before it
	rstrip     bool // also takes the whitespace after it
	normalized bool // matched in normalized text, after the normalizer runs
	special    bool
}

// addedVocab finds added tokens in text the way `tokenizers`' AddedVocabulary
// does: tokens with normalized=false are found in the raw text first; the
// text between them is normalized and then searched for the normalized=true
// tokens. Each search takes the leftmost match, the longest among those
// starting there, and continues after it.
type addedVocab struct {
	byID map[uint32]*addedToken
	raw  *tokenTrie // tokens with normalized=false
	norm *tokenTrie // tokens with normalized=true, keyed by their normalized text
}

// segment is a piece of text that is either an added token (isToken, id) or
// text still to tokenize.
type segment struct {
	start, end int
	id         uint32
	isToken    bool
}

// split cuts s at the matches of trie (nil: no tokens) and appends the
// segments, applying single_word, lstrip and rstrip as `tokenizers` does.
func (av *addedVocab) split(dst []segment, s string, trie *tokenTrie) []segment {
	if trie == nil {
		return append(dst, segment{start: 0, end: len(s)})
	}
	startOffset := 0
	for pos := 0; pos < len(s); {
		a, b, id, ok := trie.find(s, pos)
		if !ok {
			break
		}
		// The search resumes after the match whether or not it is used,
		// as the Aho-Corasick iterator in `tokenizers` does.
		pos = b
		tok := av.byID[id]
		start, stop := a, b
		if tok.singleWord {
			startSpace := start == 0 || !endsWithWordChar(s[:start])
			stopSpace := stop == len(s) || !startsWithWordChar(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.lstrip {
			start = max(trailingSpaceStart(s[:start]), startOffset)
		}
		if tok.rstrip {
			stop += leadingSpaceLen(s[stop:])
		}
		if startOffset < start {
			dst = append(dst, segment{start: startOffset, end: start})
		}
		dst = append(dst, segment{start: start, end: stop, id: id, isToken: true})
		startOffset = stop
	}
	if startOffset != len(s) {
		dst = append(dst, segment{start: startOffset, end: len(s)})
	}
	return dst
}

// isWordChar is Rust regex's Unicode \w: Alphabetic, marks, decimal digits,
// connector punctuation and the joiners. Alphabetic is L + Nl +
// Other_Alphabetic + Other_Lowercase + Other_Uppercase.
func isWordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || (r >= '0' && r <= '9') || (r|0x20 >= 'a' && r|0x20 <= 'z')
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) ||
		unicode.In(r, unicode.Nd, unicode.Nl, unicode.Pc, unicode.Other_Alphabetic,
			unicode.Other_Lowercase, unicode.Other_Uppercase, unicode.Join_Control)
}

func endsWithWordChar(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

// trailingSpaceStart is where the whitespace at the end of s begins (len(s)
// if there is none).
func trailingSpaceStart(s string) int {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			break
		}
		i -= n
	}
	return i
}

// leadingSpaceLen is the length of the whitespace at the start of s.
func leadingSpaceLen(s string) int {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}

// tokenTrie is a byte trie over token texts.
type tokenTrie struct {
	first [256]bool // bytes that start some token, to skip the rest fast
	nodes []trieNode
}

type trieNode struct {
	next     map[byte]int32
	id       uint32
	terminal bool
}

func newTokenTrie() *tokenTrie {
	return &tokenTrie{nodes: make([]trieNode, 1)}
}

// add inserts a non-empty text; it reports false if the text is already
// there (`tokenizers` refuses duplicate patterns).
func (t *tokenTrie) add(text string, id uint32) bool {
	t.first[text[0]] = true
	n := int32(0)
	for i := 0; i < len(text); i++ {
		node := &t.nodes[n]
		child, ok := node.next[text[i]]
		if !ok {
			if node.next == nil {
				node.next = make(map[byte]int32, 1)
			}
			child = int32(len(t.nodes))
			node.next[text[i]] = child
			t.nodes = append(t.nodes, trieNode{})
		}
		n = child
	}
	if t.nodes[n].terminal {
		return false
	}
	t.nodes[n].terminal, t.nodes[n].id = true, id
	return true
}

// find returns the leftmost-longest match starting at or after from.
func (t *tokenTrie) find(s string, from int) (start, end int, id uint32, ok bool) {
	for p := from; p < len(s); p++ {
		if !t.first[s[p]] {
			continue
		}
		n := int32(0)
		for i := p; i < len(s); i++ {
			child, has := t.nodes[n].next[s[i]]
			if !has {
				break
			}
			n = child
			if t.nodes[n].terminal {
				end, id, ok = i+1, t.nodes[n].id, true
			}
		}
		if ok {
			return p, end, id, true
		}
	}
	return 0, 0, 0, false
}

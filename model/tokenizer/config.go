package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxTokenID bounds the ids a tokenizer.json may use, so that a corrupt file
// cannot make Parse allocate an id table of billions of entries. Real
// vocabularies are below a million.
const maxTokenID = 1<<24 - 1

// fileJSON is the top level of tokenizer.json. truncation and padding are
// not read: they are batch options of `tokenizers`, and Encode never
// truncates or pads.
type fileJSON struct {
	Version       *string           `json:"version"`
	AddedTokens   []json.RawMessage `json:"added_tokens"`
	Normalizer    json.RawMessage   `json:"normalizer"`
	PreTokenizer  json.RawMessage   `json:"pre_tokenizer"`
	PostProcessor json.RawMessage   `json:"post_processor"`
	Decoder       json.RawMessage   `json:"decoder"`
	Model         json.RawMessage   `json:"model"`
}

// Parse builds a Tokenizer from the contents of a tokenizer.json. Errors are
// *Error values wrapping ErrInvalid or ErrUnsupported.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, invalid("", "not a tokenizer.json object", err)
	}
	if f.Version != nil && *f.Version != "1.0" {
		return nil, unsupported("version", fmt.Sprintf("tokenizer.json version %q (only \"1.0\" exists)", *f.Version))
	}
	t := &Tokenizer{}
	var err error
	if isNull(f.Model) {
		return nil, invalid("model", "missing", nil)
	}
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, err
	}
	if t.normalizer, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.steps, err = parsePreTokenizer(f.PreTokenizer, "pre_tokenizer", false); err != nil {
		return nil, err
	}
	if n := len(t.steps); n > 0 {
		if bl, ok := t.steps[n-1].(*byteLevelStep); ok {
			bl.mapBytes = false
			t.byteLevelAtModel = true
		}
	}
	if t.template, err = parsePostProcessor(f.PostProcessor, "post_processor", false); err != nil {
		return nil, err
	}
	if t.decoder, err = parseDecoder(f.Decoder, "decoder"); err != nil {
		return nil, err
	}
	if err := t.addTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	// A tokenizer with no tokens encodes nothing; it is a broken export,
	// not a model to load.
	if len(t.tokens) == 0 {
		return nil, invalid("model.vocab", "empty, and there are no added_tokens: the tokenizer has no tokens", nil)
	}
	return t, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// componentType reads the "type" of a component object. present is false
// for a missing or null component; inSequence makes null an error.
func componentType(raw json.RawMessage, field string, inSequence bool) (typ string, present bool, err error) {
	if isNull(raw) {
		if inSequence {
			return "", false, invalid(field, "null inside a Sequence", nil)
		}
		return "", false, nil
	}
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", true, invalid(field, "not a JSON object", err)
	}
	if head.Type == nil {
		return "", true, invalid(field, `missing "type"`, nil)
	}
	return *head.Type, true, nil
}

func decodeInto(raw json.RawMessage, field string, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(field, "malformed", err)
	}
	return nil
}

type bpeJSON struct {
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 *bool             `json:"fuse_unk"`
	ByteFallback            *bool             `json:"byte_fallback"`
	IgnoreMerges            *bool             `json:"ignore_merges"`
	Vocab                   map[string]uint32 `json:"vocab"`
	Merges                  json.RawMessage   `json:"merges"`
}

func parseModel(raw json.RawMessage) (*bpeModel, error) {
	typ, _, err := componentType(raw, "model", false)
	if err != nil {
		return nil, err
	}
	if typ != "BPE" {
		return nil, unsupported("model.type", fmt.Sprintf("model %q (only \"BPE\" is implemented)", typ))
	}
	var j bpeJSON
	if err := decodeInto(raw, "model", &j); err != nil {
		return nil, err
	}
	switch {
	case j.Dropout != nil && (*j.Dropout < 0 || *j.Dropout > 1):
		return nil, invalid("model.dropout", fmt.Sprintf("%v is not in [0, 1]", *j.Dropout), nil)
	case j.Dropout != nil && *j.Dropout > 0:
		return nil, unsupported("model.dropout", fmt.Sprintf("BPE dropout %v (encoding would be random)", *j.Dropout))
	case j.ContinuingSubwordPrefix != nil && *j.ContinuingSubwordPrefix != "":
		return nil, unsupported("model.continuing_subword_prefix", fmt.Sprintf("%q", *j.ContinuingSubwordPrefix))
	case j.EndOfWordSuffix != nil && *j.EndOfWordSuffix != "":
		return nil, unsupported("model.end_of_word_suffix", fmt.Sprintf("%q", *j.EndOfWordSuffix))
	case j.Vocab == nil:
		return nil, invalid("model.vocab", "missing", nil)
	case isNull(j.Merges):
		return nil, invalid("model.merges", "missing", nil)
	}
	m := &bpeModel{
		vocab:        j.Vocab,
		ignoreMerges: j.IgnoreMerges != nil && *j.IgnoreMerges,
		fuseUnk:      j.FuseUnk != nil && *j.FuseUnk,
		byteFallback: j.ByteFallback != nil && *j.ByteFallback,
	}
	for tok, id := range j.Vocab {
		if id > maxTokenID {
			return nil, unsupported("model.vocab", fmt.Sprintf("token %q has id %d; ids above %d are not supported", tok, id, maxTokenID))
		}
	}
	// The byte tokens, spelled as `tokenizers` looks them up
	// (format!("<{b:#04X}>")). Decoding recognises them by their text, with
	// or without byte_fallback, as the ByteFallback decoder does.
	for b := range 256 {
		if id, ok := j.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b], m.byteKnown[b] = id, true
		}
	}
	if j.UnkToken != nil {
		id, ok := j.Vocab[*j.UnkToken]
		if !ok {
			return nil, invalid("model.unk_token", fmt.Sprintf("%q is not in the vocabulary", *j.UnkToken), nil)
		}
		m.hasUnk, m.unkID = true, id
	}
	pairs, err := parseMerges(j.Merges)
	if err != nil {
		return nil, err
	}
	m.merges = make(map[uint64]mergeRule, len(pairs))
	for rank, p := range pairs {
		a, okA := j.Vocab[p[0]]
		b, okB := j.Vocab[p[1]]
		merged, okM := j.Vocab[p[0]+p[1]]
		field := fmt.Sprintf("model.merges[%d]", rank)
		switch {
		case !okA:
			return nil, invalid(field, fmt.Sprintf("token %q is not in the vocabulary", p[0]), nil)
		case !okB:
			return nil, invalid(field, fmt.Sprintf("token %q is not in the vocabulary", p[1]), nil)
		case !okM:
			return nil, invalid(field, fmt.Sprintf("merged token %q is not in the vocabulary", p[0]+p[1]), nil)
		}
		// A repeated pair keeps its last rank, as in `tokenizers`.
		m.merges[pairKey(a, b)] = mergeRule{rank: uint32(rank), id: merged}
	}
	return m, nil
}

// parseMerges accepts both merges formats: ["a b", ...] (older files; the
// rank skips "#version" lines) and [["a", "b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	body := bytes.TrimLeft(raw, " \t\r\n")
	if len(body) == 0 || body[0] != '[' {
		return nil, invalid("model.merges", "not a list", nil)
	}
	if rest := bytes.TrimLeft(body[1:], " \t\r\n"); len(rest) > 0 && rest[0] == '[' {
		var lists [][]string
		if err := json.Unmarshal(raw, &lists); err != nil {
			return nil, invalid("model.merges", "malformed", err)
		}
		pairs := make([][2]string, len(lists))
		for i, l := range lists {
			if len(l) != 2 {
				return nil, invalid(fmt.Sprintf("model.merges[%d]", i), fmt.Sprintf("a merge has 2 tokens, not %d", len(l)), nil)
			}
			pairs[i] = [2]string{l[0], l[1]}
		}
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, invalid("model.merges", "malformed", err)
	}
	pairs := make([][2]string, 0, len(lines))
	for i, line := range lines {
		if strings.HasPrefix(line, "#version") {
			continue
		}
		parts := strings.Split(line, " ")
		if len(parts) != 2 {
			return nil, invalid(fmt.Sprintf("model.merges[%d]", i), fmt.Sprintf("%q is not two tokens separated by one space", line), nil)
		}
		pairs = append(pairs, [2]string{parts[0], parts[1]})
	}
	return pairs, nil
}

func parseNormalizer(raw json.RawMessage, field string) (normalizer, error) {
	typ, present, err := componentType(raw, field, false)
	if err != nil || !present {
		return nil, err
	}
	switch typ {
	case "NFC":
		return nfcNormalizer{}, nil
	case "Prepend":
		var j struct {
			Prepend *string `json:"prepend"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.Prepend == nil {
			return nil, invalid(field+".prepend", "missing", nil)
		}
		return prependNormalizer(*j.Prepend), nil
	case "Replace":
		old, content, err := parseReplace(raw, field)
		if err != nil {
			return nil, err
		}
		return replaceNormalizer{old: old, new: content}, nil
	case "Sequence":
		var j struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.Normalizers == nil {
			return nil, invalid(field+".normalizers", "missing", nil)
		}
		var seq normalizerSequence
		for i, r := range j.Normalizers {
			sub := fmt.Sprintf("%s.normalizers[%d]", field, i)
			if _, _, err := componentType(r, sub, true); err != nil {
				return nil, err
			}
			n, err := parseNormalizer(r, sub)
			if err != nil {
				return nil, err
			}
			if inner, ok := n.(normalizerSequence); ok {
				seq = append(seq, inner...)
			} else if n != nil {
				seq = append(seq, n)
			}
		}
		if len(seq) == 0 {
			return nil, nil
		}
		return seq, nil
	}
	return nil, unsupported(field+".type", fmt.Sprintf("normalizer %q (implemented: NFC, Prepend, Replace, Sequence)", typ))
}

// parseReplace reads a Replace normalizer or decoder: a String pattern and
// its replacement. Regex patterns are not implemented.
func parseReplace(raw json.RawMessage, field string) (pattern, content string, err error) {
	var j struct {
		Pattern *struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Content *string `json:"content"`
	}
	if err := decodeInto(raw, field, &j); err != nil {
		return "", "", err
	}
	switch {
	case j.Pattern == nil:
		return "", "", invalid(field+".pattern", "missing", nil)
	case j.Content == nil:
		return "", "", invalid(field+".content", "missing", nil)
	case j.Pattern.Regex != nil:
		return "", "", unsupported(field+".pattern.Regex", fmt.Sprintf("Replace with the regex %q (implemented: String patterns)", *j.Pattern.Regex))
	case j.Pattern.String == nil:
		return "", "", invalid(field+".pattern", `neither "String" nor "Regex"`, nil)
	case *j.Pattern.String == "":
		return "", "", unsupported(field+".pattern.String", "empty string pattern")
	}
	return *j.Pattern.String, *j.Content, nil
}

func parsePreTokenizer(raw json.RawMessage, field string, inSequence bool) ([]preTokenizer, error) {
	typ, present, err := componentType(raw, field, inSequence)
	if err != nil || !present {
		return nil, err
	}
	switch typ {
	case "ByteLevel":
		var j struct {
			AddPrefixSpace *bool `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.AddPrefixSpace == nil {
			return nil, invalid(field+".add_prefix_space", "missing", nil)
		}
		return []preTokenizer{&byteLevelStep{
			addPrefixSpace: *j.AddPrefixSpace,
			useRegex:       j.UseRegex == nil || *j.UseRegex, // defaults to true in `tokenizers`
			mapBytes:       true,
		}}, nil
	case "Split":
		var j struct {
			Pattern *struct {
				String *string `json:"String"`
				Regex  *string `json:"Regex"`
			} `json:"pattern"`
			Behavior *string `json:"behavior"`
			Invert   *bool   `json:"invert"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		switch {
		case j.Pattern == nil:
			return nil, invalid(field+".pattern", "missing", nil)
		case j.Behavior == nil:
			return nil, invalid(field+".behavior", "missing", nil)
		case j.Invert == nil:
			return nil, invalid(field+".invert", "missing", nil)
		}
		st := &splitStep{invert: *j.Invert}
		b, ok := behaviorNames[*j.Behavior]
		if !ok {
			return nil, invalid(field+".behavior", fmt.Sprintf("unknown behavior %q", *j.Behavior), nil)
		}
		st.behavior = b
		switch {
		case j.Pattern.Regex != nil:
			re, ok := knownRegex(*j.Pattern.Regex)
			if !ok {
				return nil, unsupported(field+".pattern.Regex", fmt.Sprintf(
					"regex %q is not one this package implements (the GPT-2, Llama-3 and Qwen2 patterns; Go's regexp cannot run Oniguruma patterns such as \\s+(?!\\S), so each is hand-written)",
					*j.Pattern.Regex))
			}
			st.pattern = re
		case j.Pattern.String != nil:
			if *j.Pattern.String == "" {
				return nil, unsupported(field+".pattern.String", "empty string pattern")
			}
			st.pattern = literalPattern(*j.Pattern.String)
		default:
			return nil, invalid(field+".pattern", `neither "String" nor "Regex"`, nil)
		}
		return []preTokenizer{st}, nil
	case "Metaspace":
		step, err := parseMetaspace(raw, field)
		if err != nil {
			return nil, err
		}
		return []preTokenizer{step}, nil
	case "Digits":
		var j struct {
			IndividualDigits *bool `json:"individual_digits"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.IndividualDigits == nil {
			return nil, invalid(field+".individual_digits", "missing", nil)
		}
		return []preTokenizer{&digitsStep{individual: *j.IndividualDigits}}, nil
	case "Sequence":
		var j struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.PreTokenizers == nil {
			return nil, invalid(field+".pretokenizers", "missing", nil)
		}
		var steps []preTokenizer
		for i, r := range j.PreTokenizers {
			sub := fmt.Sprintf("%s.pretokenizers[%d]", field, i)
			s, err := parsePreTokenizer(r, sub, true)
			if err != nil {
				return nil, err
			}
			for k, st := range s {
				if ms, ok := st.(*metaspaceStep); ok && len(steps)+k > 0 && ms.scheme == prependFirst {
					// Which piece starts the text is only tracked for
					// the first step.
					return nil, unsupported(sub+".prepend_scheme", `"first" on a Metaspace that is not the first pre-tokenizer`)
				}
			}
			steps = append(steps, s...)
		}
		return steps, nil
	}
	return nil, unsupported(field+".type", fmt.Sprintf("pre-tokenizer %q (implemented: ByteLevel, Split, Digits, Metaspace, Sequence)", typ))
}

// parseMetaspace reads a Metaspace pre-tokenizer or decoder as `tokenizers`
// does: prepend_scheme defaults to "always" and split to true, and the older
// add_prefix_space false means "never".
func parseMetaspace(raw json.RawMessage, field string) (*metaspaceStep, error) {
	var j struct {
		Replacement    *string `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		Split          *bool   `json:"split"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
	}
	if err := decodeInto(raw, field, &j); err != nil {
		return nil, err
	}
	if j.Replacement == nil {
		return nil, invalid(field+".replacement", "missing", nil)
	}
	if utf8.RuneCountInString(*j.Replacement) != 1 {
		return nil, invalid(field+".replacement", fmt.Sprintf("%q is not one character", *j.Replacement), nil)
	}
	m := &metaspaceStep{replacement: *j.Replacement, scheme: prependAlways, splitPieces: j.Split == nil || *j.Split}
	if j.PrependScheme != nil {
		sc, ok := prependSchemeNames[*j.PrependScheme]
		if !ok {
			return nil, invalid(field+".prepend_scheme", fmt.Sprintf("unknown scheme %q", *j.PrependScheme), nil)
		}
		m.scheme = sc
	}
	if j.AddPrefixSpace != nil && !*j.AddPrefixSpace {
		if m.scheme != prependNever {
			return nil, invalid(field+".add_prefix_space", "add_prefix_space does not match declared prepend_scheme", nil)
		}
		m.scheme = prependNever
	}
	return m, nil
}

func parsePostProcessor(raw json.RawMessage, field string, inSequence bool) (template, error) {
	typ, present, err := componentType(raw, field, inSequence)
	if err != nil || !present {
		return nil, err
	}
	switch typ {
	case "ByteLevel":
		return nil, nil // it only trims offsets
	case "TemplateProcessing":
		pieces, err := parseTemplate(raw, field)
		if err != nil {
			return nil, err
		}
		return template{pieces}, nil
	case "Sequence":
		var j struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.Processors == nil {
			return nil, invalid(field+".processors", "missing", nil)
		}
		var all template
		for i, r := range j.Processors {
			t, err := parsePostProcessor(r, fmt.Sprintf("%s.processors[%d]", field, i), true)
			if err != nil {
				return nil, err
			}
			all = append(all, t...)
		}
		return all, nil
	}
	return nil, unsupported(field+".type", fmt.Sprintf("post-processor %q (implemented: TemplateProcessing, ByteLevel, Sequence)", typ))
}

type templateIDJSON struct {
	ID *string `json:"id"`
}

func parseTemplate(raw json.RawMessage, field string) ([]templatePiece, error) {
	var j struct {
		Single        []map[string]templateIDJSON `json:"single"`
		SpecialTokens map[string]struct {
			IDs []uint32 `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := decodeInto(raw, field, &j); err != nil {
		return nil, err
	}
	if j.Single == nil {
		return nil, invalid(field+".single", "missing", nil)
	}
	var pieces []templatePiece
	for i, p := range j.Single {
		sub := fmt.Sprintf("%s.single[%d]", field, i)
		if len(p) != 1 {
			return nil, invalid(sub, "a template piece is one of {\"Sequence\": ...} or {\"SpecialToken\": ...}", nil)
		}
		for kind, v := range p {
			if v.ID == nil {
				return nil, invalid(sub+"."+kind+".id", "missing", nil)
			}
			switch kind {
			case "Sequence":
				if *v.ID != "A" {
					return nil, invalid(sub, fmt.Sprintf("the single-sequence template refers to sequence %q", *v.ID), nil)
				}
				pieces = append(pieces, templatePiece{sequence: true})
			case "SpecialToken":
				st, ok := j.SpecialTokens[*v.ID]
				if !ok {
					return nil, invalid(sub, fmt.Sprintf("special token %q is not in special_tokens", *v.ID), nil)
				}
				pieces = append(pieces, templatePiece{ids: slices.Clone(st.IDs)})
			default:
				return nil, invalid(sub, fmt.Sprintf("unknown template piece %q", kind), nil)
			}
		}
	}
	return pieces, nil
}

func parseDecoder(raw json.RawMessage, field string) (decoder, error) {
	steps, err := parseDecodeSteps(raw, field, false)
	if err != nil || steps == nil {
		return decoder{}, err
	}
	var d decoder
	for i, st := range steps {
		switch st := st.(type) {
		case nil: // ByteLevel
			if len(steps) != 1 {
				return decoder{}, unsupported(field, fmt.Sprintf("ByteLevel in a chain of %d decoders (implemented: ByteLevel alone, or a chain of Replace, ByteFallback, Fuse, Strip and Metaspace)", len(steps)))
			}
			return decoder{kind: decoderByteLevel}, nil
		case byteFallbackDecoder:
			d.byteRuns = true
		case stripDecoder:
			if st.stop > 0 || st.start > 1 {
				d.streamWhole = true
			}
		}
		d.steps = append(d.steps, steps[i])
	}
	d.kind = decoderChain
	return d, nil
}

// parseDecodeSteps flattens a decoder into its steps; a ByteLevel decoder is
// a nil step. A missing decoder is no steps.
func parseDecodeSteps(raw json.RawMessage, field string, inSequence bool) ([]decodeStep, error) {
	typ, present, err := componentType(raw, field, inSequence)
	if err != nil || !present {
		return nil, err
	}
	switch typ {
	case "ByteLevel":
		return []decodeStep{nil}, nil
	case "Replace":
		old, content, err := parseReplace(raw, field)
		if err != nil {
			return nil, err
		}
		return []decodeStep{replaceDecoder{old: old, new: content}}, nil
	case "ByteFallback":
		return []decodeStep{byteFallbackDecoder{}}, nil
	case "Fuse":
		return []decodeStep{fuseDecoder{}}, nil
	case "Strip":
		var j struct {
			Content *string `json:"content"`
			Start   *int    `json:"start"`
			Stop    *int    `json:"stop"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		switch {
		case j.Content == nil || utf8.RuneCountInString(*j.Content) != 1:
			return nil, invalid(field+".content", "not one character", nil)
		case j.Start == nil || *j.Start < 0:
			return nil, invalid(field+".start", "missing or negative", nil)
		case j.Stop == nil || *j.Stop < 0:
			return nil, invalid(field+".stop", "missing or negative", nil)
		}
		r, _ := utf8.DecodeRuneInString(*j.Content)
		return []decodeStep{stripDecoder{content: r, start: *j.Start, stop: *j.Stop}}, nil
	case "Metaspace":
		m, err := parseMetaspace(raw, field)
		if err != nil {
			return nil, err
		}
		r, _ := utf8.DecodeRuneInString(m.replacement)
		return []decodeStep{metaspaceDecoder{replacement: r, scheme: m.scheme}}, nil
	case "Sequence":
		var j struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := decodeInto(raw, field, &j); err != nil {
			return nil, err
		}
		if j.Decoders == nil {
			return nil, invalid(field+".decoders", "missing", nil)
		}
		steps := []decodeStep{}
		for i, r := range j.Decoders {
			s, err := parseDecodeSteps(r, fmt.Sprintf("%s.decoders[%d]", field, i), true)
			if err != nil {
				return nil, err
			}
			steps = append(steps, s...)
		}
		return steps, nil
	}
	return nil, unsupported(field+".type", fmt.Sprintf("decoder %q (implemented: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)", typ))
}

type addedTokenJSON struct {
	ID         *uint32 `json:"id"`
	Content    *string `json:"content"`
	SingleWord *bool   `json:"single_word"`
	LStrip     *bool   `json:"lstrip"`
	RStrip     *bool   `json:"rstrip"`
	Normalized *bool   `json:"normalized"`
	Special    *bool   `json:"special"`
}

// addTokens registers added_tokens the way `tokenizers` does when it loads a
// file: in file order; a token already in the vocabulary keeps that id, and
// any other gets the next id after the model's vocabulary (the "id" written
// in the file is only checked by `tokenizers`, with a warning, and so is not
// used here either).
func (t *Tokenizer) addTokens(raws []json.RawMessage) error {
	vocab := t.model.vocab
	nextID := uint32(len(vocab))
	t.addedIDs = map[string]uint32{}
	t.added.byID = map[uint32]*addedToken{}
	specialSet := map[string]bool{}
	for i, raw := range raws {
		field := fmt.Sprintf("added_tokens[%d]", i)
		var j addedTokenJSON
		if err := decodeInto(raw, field, &j); err != nil {
			return err
		}
		for _, f := range []struct {
			name    string
			present bool
		}{
			{"id", j.ID != nil}, {"content", j.Content != nil}, {"single_word", j.SingleWord != nil},
			{"lstrip", j.LStrip != nil}, {"rstrip", j.RStrip != nil}, {"normalized", j.Normalized != nil}, {"special", j.Special != nil},
		} {
			if !f.present {
				return invalid(field+"."+f.name, "missing", nil)
			}
		}
		tok := addedToken{
			content: *j.Content, singleWord: *j.SingleWord, lstrip: *j.LStrip, rstrip: *j.RStrip,
			normalized: *j.Normalized, special: *j.Special,
		}
		if tok.content == "" {
			continue
		}
		id, seen := t.addedIDs[tok.content]
		if seen && *t.added.byID[id] == tok {
			continue
		}
		if !seen {
			if vid, ok := vocab[tok.content]; ok {
				id = vid
			} else {
				if nextID > maxTokenID {
					return unsupported(field, fmt.Sprintf("token %q would get id %d; ids above %d are not supported", tok.content, nextID, maxTokenID))
				}
				id = nextID
				nextID++
			}
		}
		t.addedIDs[tok.content] = id
		if tok.special {
			specialSet[tok.content] = true
		}
		t.added.byID[id] = &tok
	}

	// The id table: vocabulary first, added tokens over it. A normalized
	// added token is matched, and decoded, in its normalized form.
	size := 0
	for _, id := range vocab {
		size = max(size, int(id)+1)
	}
	for id := range t.added.byID {
		size = max(size, int(id)+1)
	}
	if count := len(vocab) + len(t.added.byID); size > 2*count+1<<16 {
		return unsupported("model.vocab", fmt.Sprintf("ids up to %d for %d tokens; ids this sparse are not supported", size-1, count))
	}
	t.tokens = make([]tokenEntry, size)
	for tok, id := range vocab {
		e := &t.tokens[id]
		// Two tokens with one id: keep the smaller text, so the choice
		// does not depend on map order.
		if !e.known || tok < e.text {
			*e = tokenEntry{text: tok, known: true}
		}
	}
	ids := make([]uint32, 0, len(t.added.byID))
	for id := range t.added.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		tok := t.added.byID[id]
		text := tok.content
		trie := &t.added.raw
		if tok.normalized {
			trie = &t.added.norm
			if t.normalizer != nil {
				text = t.normalizer.normalize(text)
			}
		}
		t.tokens[id] = tokenEntry{text: text, known: true}
		if text == "" {
			return invalid("added_tokens", fmt.Sprintf("token %q normalizes to nothing", tok.content), nil)
		}
		if *trie == nil {
			*trie = newTokenTrie()
		}
		if !(*trie).add(text, id) {
			return invalid("added_tokens", fmt.Sprintf("two added tokens match the same text %q", text), nil)
		}
	}
	for id := range t.tokens {
		if e := &t.tokens[id]; e.known && specialSet[e.text] {
			e.special = true
			t.special = append(t.special, uint32(id))
		}
	}
	return nil
}

// Command tokdump encodes text with a tokenizer.json, for comparing this
// package's ids with another implementation's (such as Hugging Face
// `tokenizers`) on many strings.
//
// It reads one JSON value per line on stdin and writes one JSON value per line
// on stdout. In the default encode mode each input line is a JSON string and
// each output line is the JSON array of its ids; in decode mode each input
// line is a JSON array of ids and each output line the decoded JSON string.
//
//	tokdump -tokenizer tokenizer.json [-special] [-decode [-skip-special]] < in.jsonl > out.jsonl
//
// hfcheck.py, next to this file, runs it against Hugging Face `tokenizers` on
// generated strings (and on tokenizers it trains) and reports every
// difference. Note that `tokenizers` encodes with add_special_tokens=True by
// default; -special is the equivalent here.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hipgo/hipgo/model/tokenizer"
)

func main() {
	path := flag.String("tokenizer", "", "path to tokenizer.json (required)")
	special := flag.Bool("special", false, "encode: apply the post-processor template (add_special_tokens=True)")
	decode := flag.Bool("decode", false, "decode arrays of ids instead of encoding strings")
	skipSpecial := flag.Bool("skip-special", false, "decode: drop special tokens (skip_special_tokens=True)")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "tokdump: -tokenizer is required")
		flag.Usage()
		os.Exit(2)
	}
	tok, err := tokenizer.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokdump:", err)
		os.Exit(1)
	}
	if err := run(tok, os.Stdin, os.Stdout, *special, *decode, *skipSpecial); err != nil {
		fmt.Fprintln(os.Stderr, "tokdump:", err)
		os.Exit(1)
	}
}

func run(tok *tokenizer.Tokenizer, in io.Reader, out io.Writer, special, decode, skipSpecial bool) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if decode {
				var ids []uint32
				if err := json.Unmarshal(line, &ids); err != nil {
					return fmt.Errorf("line %d: not a JSON array of ids: %w", n, err)
				}
				if err := enc.Encode(tok.DecodeWith(ids, tokenizer.DecodeOptions{SkipSpecial: skipSpecial})); err != nil {
					return err
				}
			} else {
				var s string
				if err := json.Unmarshal(line, &s); err != nil {
					return fmt.Errorf("line %d: not a JSON string: %w", n, err)
				}
				ids := tok.Encode(s, special)
				if ids == nil {
					ids = []uint32{} // [] rather than null
				}
				if err := enc.Encode(ids); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	return w.Flush()
}

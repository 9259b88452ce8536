// Package demo embeds hipgo's demo model: a small Llama (11.0M parameters:
// 6 layers, hidden 384, 6 heads with 2 key-value heads, tied embeddings, bf16)
// and its byte-level BPE tokenizer (4096 tokens), both trained by the project
// on the King James Bible (public domain, from Debian's bible-kjv package) on
// an NVIDIA H200 with tools/traindemo. train_log.json records the run.
//
// It is what `go run ./examples/generate` uses when no -model is given, so
// the program works offline on a fresh machine with nothing but Go. See
// docs/demo-model.md for the corpus, its licence and how to retrain it.
package demo

"""Writes a Hugging Face tokenizer.json from a GGUF that holds a BPE
vocabulary: Llama 3's (tokenizer.ggml.pre "llama-bpe": llama.cpp's
models/ggml-vocab-llama-bpe.gguf or any Llama-3 GGUF) or SmolLM's ("smollm":
the SmolLM2 GGUF scripts/deps.sh fetches), with its tokens, merges, special
tokens and that model's pre-tokenizer.

Why: the decode side-by-side saves random-init Llama-3.2-1B-shaped weights
with transformers and converts them with llama.cpp's convert_hf_to_gguf.py,
which needs a tokenizer it recognises (it hashes the tokenization of a test
string). A random-init checkpoint has none, and the GPU machine has no
network. Speed does not depend on the vocabulary's contents, only its size.

    python3 vocab_tokenizer.py VOCAB.gguf OUT_DIR
"""
import json
import os
import sys

import gguf  # PyPI gguf, or llama.cpp's gguf-py on sys.path

# Llama 3's pre-tokenizer split (tokenizer.json of Meta's release).
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def field(r, name):
    f = r.fields[name]
    return f.contents()


def main(src, out):
    r = gguf.GGUFReader(src)
    if field(r, "tokenizer.ggml.model") != "gpt2":
        sys.exit(f"{src}: not a BPE (gpt2) vocabulary")
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = field(r, "tokenizer.ggml.merges")
    bos = int(field(r, "tokenizer.ggml.bos_token_id"))
    eos = int(field(r, "tokenizer.ggml.eos_token_id"))
    vocab, added = {}, []
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty == gguf.TokenType.CONTROL or ty == gguf.TokenType.USER_DEFINED:
            added.append({"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True})
        vocab[t] = i
    bos_tok = tokens[bos]
    pre = field(r, "tokenizer.ggml.pre")
    if pre == "llama-bpe":
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ]}
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos_tok, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos_tok, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": bos_tok, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {bos_tok: {"id": bos_tok, "ids": [bos], "tokens": [bos_tok]}}}
    elif pre == "smollm":
        # GPT-2's byte-level split with every digit on its own.
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        ]}
        post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    else:
        sys.exit(f"{src}: pre-tokenizer {pre!r}: only llama-bpe and smollm are known here")
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": list(merges)},
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": bos_tok,
                   "eos_token": tokens[eos], "model_max_length": 131072, "clean_up_tokenization_spaces": True}, f)
    print(f"{out}: {len(vocab)} tokens, {len(merges)} merges, {len(added)} special")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

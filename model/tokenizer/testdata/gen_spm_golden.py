#!/usr/bin/env python3
"""Writes the SentencePiece-style tokenizer goldens (run once, committed).

    python3 gen_spm_golden.py LLAMA2_TOKENIZER_JSON GEMMA3_TOKENIZER_JSON

with the files scripts/deps.sh fetches (.cache/tokenizers/{llama2,gemma3}),
from this directory, where Hugging Face `tokenizers` is installed. It writes
golden-spm-strings.jsonl (the corpus: one JSON string a line) and, for each
tokenizer of spm-variants.json (a real file, or a real file with the listed
fields replaced and added tokens appended, the same edit realfiles_spm_test.go
makes), golden-spm-NAME.jsonl: per string, the ids `tokenizers` gives with
add_special_tokens False and True, and decode of the first with
skip_special_tokens False and True.
"""
import json
import random
import sys
import unicodedata

SPECIALS = ["<s>", "</s>", "<unk>", "<bos>", "<eos>", "<pad>", "<mask>", "<start_of_turn>", "<end_of_turn>",
            "[INST]", "[/INST]", "<|im_start|>", "<|im_end|>", "<|end|>", "<|user|>", "<tool>", "<0x41>", "<0xE4>",
            "<start_of_image>", "<unused12>"]

POOLS = [
    ["hello", "world", "The", "quick", "brown", "fox", "don't", "it's", "HELLO", "LORD", "thee", "unto", "And",
     "user", "model", "assistant", "system"],
    [" ", "  ", "   ", "    ", " " * 9, "\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\t\t", "\u00a0", "\u3000",
     "\u2003", "\u2028", "\u0085", "\ufeff", "\u200b", "\x0b", "\x0c", "\n \n", "    \n", "\u2581", "\u2581\u2581 "],
    ["0", "1", "12", "123", "1234", "12345", "3.14", "1,000", "2024-01-31", "\u0663\u0664\u0665", "\u2460\u2461",
     "\u00bd", "\u216b", "\u0968\u0966\u0968\u0967", "0x1F", "1e-5"],
    list(".,!?;:()[]{}\"-#@$%^&*_=+/\\|<>~`'") + ["--", "...", "\u2014", "\u00ab\u00bb", "\u2019s", "->", "=>", "::"],
    ["\u00e9", "caf\u00e9", "na\u00efve", "\u03a9\u03bc\u03ad\u03b3\u03b1", "\u041f\u0440\u0438\u0432\u0435\u0442",
     "\u4f60\u597d", "\u4e16\u754c", "\u65e5\u672c\u8a9e", "\u9f98\u9f49", "\ud55c\uad6d\uc5b4",
     "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645", "\u05e9\u05dc\u05d5\u05dd",
     "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e", "\u0e20\u0e32\u0e29\u0e32", "\u00df",
     "\u0130", "\u01c5", "A\u030a", "e\u0301", "\u1100\u1161\u11a8", "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8",
     "\u0d2e\u0d32\u0d2f\u0d3e\u0d33\u0d02", "\u1780\u1798\u17d2\u1796\u17bb\u1787\u17b6"],
    ["\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F1FA\U0001F1F8",
     "\u2764\ufe0f", "\u2728", "\U0001F3F3\ufe0f\u200d\U0001F308", "\U0001F9D1\u200d\U0001F4BB", "\u0301",
     "\u200d", "\ufe0f", "\ufffd", "\U0001FAE0", "\U0001F999"],
    ["func main() {\n\tfmt.Println(\"hi\")\n}", "if (x == 1) { return y; }", "def f(x):\n    return x**2\n",
     "<div class=\"a\">", "a_b_c", "foo.bar()", "x+=1;", "// comment", "#include <stdio.h>",
     "    for i in range(10):\n        print(i)", "SELECT * FROM t WHERE id = 42;", "let v: Vec<u8> = vec![];"],
    SPECIALS,
]


def random_codepoint(rng):
    """A random code point (not a surrogate), often one a vocabulary lacks, so
    that byte fallback runs."""
    while True:
        c = rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0x10000), rng.randrange(0x10000, 0x30000),
                        rng.randrange(0xE0000, 0x110000)])
        if 0xD800 <= c <= 0xDFFF:
            continue
        return chr(c)


def gen_strings(rng, n):
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randrange(1, 14)):
            k = rng.randrange(10)
            if k == 9:
                parts.append(random_codepoint(rng))
            else:
                parts.append(rng.choice(rng.choice(POOLS)))
        out.append("".join(parts))
    out += ["", " ", "a", "\n", "   ", "  leading", "trailing  ", "1234567", " " * 40 + "x", "\n" * 20,
            "\u2581", "\u2581hello", " [INST] hi [/INST]", "[INST]hi[/INST]", "<|end|>   next", "a<|user|>\n\nb",
            "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<|im_start|>user\nhi<|im_end|>",
            "<s>[INST] x [/INST]</s>", "x <tool> y", "<tool>", "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
            "\U00100000\U0010FFFD", "\u0600\u0601", "\x00nul"]
    return out


def variant_json(variants, name, bases):
    v = variants[name]
    with open(bases[v["base"]], encoding="utf-8") as f:
        doc = json.load(f)
    for k, val in v.get("set", {}).items():
        doc[k] = val
    doc["added_tokens"] = doc["added_tokens"] + v.get("add_tokens", [])
    return json.dumps(doc)


def main():
    from tokenizers import Tokenizer
    import tokenizers
    bases = {"llama2": sys.argv[1], "gemma3": sys.argv[2]}
    with open("spm-variants.json", encoding="utf-8") as f:
        variants = json.load(f)
    strings = gen_strings(random.Random(47), 600)
    with open("golden-spm-strings.jsonl", "w", encoding="utf-8") as f:
        for s in strings:
            f.write(json.dumps(s) + "\n")
    for name in variants:
        tok = Tokenizer.from_str(variant_json(variants, name, bases))
        with open(f"golden-spm-{name}.jsonl", "w", encoding="utf-8") as f:
            for s in strings:
                ids = tok.encode(s, add_special_tokens=False).ids
                f.write(json.dumps({
                    "ids": ids,
                    "with_special": tok.encode(s, add_special_tokens=True).ids,
                    "decoded": tok.decode(ids, skip_special_tokens=False),
                    "decoded_skip": tok.decode(ids, skip_special_tokens=True),
                }, ensure_ascii=False) + "\n")
        print(f"{name}: {len(strings)} strings (tokenizers {tokenizers.__version__})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compare tokdump (this package) with Hugging Face `tokenizers` on many strings.

Run where `tokenizers` is installed, with a tokdump binary built for that
machine (CGO_ENABLED=0 go build ./model/tokenizer/internal/cmd/tokdump):

    python3 hfcheck.py --tokdump ./tokdump [--n 2000] [--train-corpus kjv.txt] tokenizer.json ...

For each tokenizer.json given, and, with --train-corpus, for two tokenizers
trained here on that corpus (a ByteLevel BPE like the demo model's, and a
Llama-3-style one with the Split pattern, ByteLevel and a BOS template), it
encodes N varied strings with add_special_tokens False and True, decodes the
ids, and reports every difference. Exit status 1 if there is any.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

LLAMA3_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

POOLS = [
    ["hello", "world", "The", "quick", "brown", "fox", "don", "it", "we", "HELLO", "LORD", "thee", "unto", "And"],
    [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\t\t", "\u00a0", "\u3000", "\u2003", "\u2028",
     "\u0085", "\ufeff", "\u200b", "\x0b", "\x0c", " \u3000 ", "\n \n", "    \n"],
    ["0", "1", "12", "123", "1234", "12345", "3.14", "1,000", "\u0663\u0664\u0665", "\u2460\u2461", "\u00bd",
     "\u216b", "\u0968\u0966\u0968\u0967", "0x1F"],
    ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'x", "''", "'",
     "'\u017f", "'\u212a"],
    list(".,!?;:()[]{}\"-#@$%^&*_=+/\\|<>~`") + ["--", "...", "\u2014", "\u00ab\u00bb", "\u2019s"],
    ["\u00e9", "caf\u00e9", "na\u00efve", "\u03a9\u03bc\u03ad\u03b3\u03b1", "\u041f\u0440\u0438\u0432\u0435\u0442",
     "\u4f60\u597d", "\u4e16\u754c", "\u65e5\u672c\u8a9e", "\ud55c\uad6d\uc5b4", "\u0645\u0631\u062d\u0628\u0627",
     "\u05e9\u05dc\u05d5\u05dd", "\u0928\u092e\u0938\u094d\u0924\u0947", "\u0e20\u0e32\u0e29\u0e32", "\u00df",
     "\u0130", "\u01c5", "A\u030a", "e\u0301", "\u1100\u1161\u11a8"],
    ["\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F1FA\U0001F1F8",
     "\u2764\ufe0f", "\u2728", "\u0301", "\u200d", "\ufe0f", "\ufffd"],
    ["func main() {\n\tfmt.Println(\"hi\")\n}", "if (x == 1) { return y; }", "def f(x):\n    return x**2\n",
     "<div class=\"a\">", "a_b_c", "foo.bar()", "x+=1;", "// comment", "#include <stdio.h>"],
]


def random_codepoint(rng):
    """A random assigned code point. Unassigned ones (per this Python's Unicode
    tables) and CJK Extension I (new in Unicode 15.1) are left out: Go 1.26's
    unicode package is Unicode 15.0, while the Oniguruma inside recent
    `tokenizers` is 15.1, so characters added after 15.0 are classified
    differently by design."""
    while True:
        c = rng.choice([rng.randrange(0x20, 0x250), rng.randrange(0x250, 0x3000), rng.randrange(0x3000, 0x10000),
                        rng.randrange(0x10000, 0x110000)])
        if 0xD800 <= c <= 0xDFFF or 0x2EBF0 <= c <= 0x2EE5F or unicodedata.category(chr(c)) == "Cn":
            continue
        return chr(c)


def gen_strings(rng, n, specials):
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randrange(1, 14)):
            k = rng.randrange(10)
            if k == 8:
                parts.append(random_codepoint(rng))
            elif k == 9 and specials:
                parts.append(rng.choice(specials))
            else:
                parts.append(rng.choice(rng.choice(POOLS)))
        out.append("".join(parts))
    out += ["", " ", "a", "\n", "   ", "1234567", "it's IT'S it\u2019s", " " * 50 + "x", "\n" * 20]
    return out


def tokdump(binary, path, lines, args):
    res = subprocess.run([binary, "-tokenizer", path] + args, input="".join(lines), capture_output=True,
                         text=True, encoding="utf-8", check=False)
    if res.returncode != 0:
        sys.exit(f"tokdump failed on {path}: {res.stderr}")
    # split on "\n" only: splitlines() would also split inside strings at U+0085 and U+2028.
    return [json.loads(l) for l in res.stdout.split("\n")[:-1]]


def check(binary, path, strings, report):
    from tokenizers import Tokenizer
    hf = Tokenizer.from_file(path)
    lines = [json.dumps(s) + "\n" for s in strings]
    bad = 0
    for special in (False, True):
        want = [hf.encode(s, add_special_tokens=special).ids for s in strings]
        got = tokdump(binary, path, lines, ["-special"] if special else [])
        for s, w, g in zip(strings, want, got):
            if w != g:
                bad += 1
                if bad <= 5:
                    report.append(f"  encode special={special} {s!r}\n    hf: {w}\n    go: {g}")
        id_lines = [json.dumps(w) + "\n" for w in want]
        for skip in (False, True):
            dec_want = [hf.decode(w, skip_special_tokens=skip) for w in want]
            dec_got = tokdump(binary, path, id_lines, ["-decode"] + (["-skip-special"] if skip else []))
            for w, dw, dg in zip(want, dec_want, dec_got):
                if dw != dg:
                    bad += 1
                    if bad <= 5:
                        report.append(f"  decode skip={skip} {w}\n    hf: {dw!r}\n    go: {dg!r}")
    return bad


def train(corpus, outdir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers, Regex
    paths = []
    alphabet = pre_tokenizers.ByteLevel.alphabet()

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.train([corpus], trainers.BpeTrainer(vocab_size=4096, special_tokens=["<|endoftext|>"],
                                            initial_alphabet=alphabet, show_progress=False))
    paths.append(os.path.join(outdir, "bytelevel.json"))
    tok.save(paths[-1])

    # Without the byte alphabet: bytes the corpus lacks are not in the vocabulary and are dropped.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train([corpus], trainers.BpeTrainer(vocab_size=2048, show_progress=False))
    paths.append(os.path.join(outdir, "bytelevel-no-alphabet.json"))
    tok.save(paths[-1])

    try:
        model = models.BPE(ignore_merges=True)
    except TypeError:
        model = models.BPE()
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.train([corpus], trainers.BpeTrainer(vocab_size=4096, initial_alphabet=alphabet, show_progress=False,
                                            special_tokens=["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    paths.append(os.path.join(outdir, "llama3-style.json"))
    tok.save(paths[-1])
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokdump", required=True)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-corpus")
    ap.add_argument("tokenizers", nargs="*")
    a = ap.parse_args()
    paths = list(a.tokenizers)
    outdir = tempfile.mkdtemp(prefix="hfcheck")
    if a.train_corpus:
        paths += train(a.train_corpus, outdir)
    import tokenizers
    print(f"tokenizers {tokenizers.__version__}")
    total = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            specials = [t["content"] for t in json.load(f).get("added_tokens", [])][:20]
        strings = gen_strings(random.Random(a.seed), a.n, specials)
        report = []
        bad = check(a.tokdump, path, strings, report)
        total += bad
        print(f"{path}: {len(strings)} strings, {bad} differences")
        for r in report:
            print(r)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()

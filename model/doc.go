// Package model runs llama-family language models from Hugging Face
// checkpoints, on the CPU in pure Go (no cgo) or on a GPU through hipgo's
// runtime and forward kernels: Llama 2 and 3 (grouped-query
// attention, RoPE with theta and Llama 3.1 rope scaling), Qwen2 and 2.5
// (q/k/v biases), SmolLM-style small models (tied embeddings), Mistral
// v0.2 and later (MistralForCausalLM with sliding_window null; 7B v0.1's
// window on every layer runs on the CPU only) and, on the
// CPU only, dense Qwen3 (a per-head RMSNorm of q and k before RoPE) and
// the Gemma 3 text model (Gemma3ForCausalLM: scaled embeddings, (1+w)
// norms four to a layer, GeGLU, q/k norms, sliding-window layers beside
// global ones with their own RoPE base, final logit soft-capping; also
// the text model inside a Gemma3ForConditionalGeneration, whose vision
// tower is left unread), Gemma 2 (Gemma2ForCausalLM: no q/k norms, one
// RoPE base, attention logit soft-capping) and Phi-3 and Phi-4
// (Phi3ForCausalLM: fused qkv_proj and gate_up_proj, partial rotary,
// LongRoPE); the GPU and MLX backends refuse those with a *BackendError.
// On the CPU a sliding-window layer's KV cache keeps only the window, so
// its memory does not grow with the context.
//
// Start with Load (a checkpoint directory or a GGUF file) or LoadFS (an
// embedded model, such as model/demo's), then Model.Generate for text,
// Model.Chat for a conversation through the chat template, or NewBatch
// for continuous batching (model/scheduler runs one for a server); Close
// the model when done. GenerateOptions' zero value is greedy;
// DefaultGenerateOptions samples.
//
// Load (or LoadFS, for an embedded model) reads config.json,
// model.safetensors (single or sharded; F32, F16 or BF16) and tokenizer.json,
// validating every tensor's name and shape against the config; a missing or
// mismatched tensor, or one the config does not use (a layer beyond
// num_hidden_layers, say; a tied lm_head.weight and rotary inv_freq caches
// are ignored, as transformers ignores them), is a *TensorError naming the
// file and the tensor (and both shapes where they differ), and a bad config
// is a *ConfigError naming the field. On the CPU, tensors the file stores
// as the model keeps them (BF16 under WeightsAuto, F32) are used in place
// from the read-only memory-mapped file (Linux and macOS), which stays
// mapped as long as the model is reachable; other tensors, and files read
// through an fs.FS, are copied once into memory the model owns (see package
// safetensors).
//
// Load also reads a GGUF file (llama.cpp's and ollama's format, see
// LoadGGUF and package gguf): llama.*, qwen2.*, qwen3.* and gemma3.*
// metadata become the Config, llama.cpp's tensor names map to the same weights (llama's q/k
// rows, which llama.cpp's converter permutes for its interleaved RoPE, are
// put back for rotate_half), the tokenizer is built from tokenizer.ggml.*, and
// quantized tensors (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) stay in their
// blocks, decoded inside the matrix products (package
// model/internal/quant), never widened to a float32 copy.
//
// BF16 weights stay in bfloat16 in memory (WeightsAuto) and are widened
// inside the dot products; F16 and F32 become float32. Every product
// accumulates in float32. Decode reads every weight once per token, so it is
// bound by memory bandwidth: keeping bf16 halves both the memory and the
// bytes read, and measured faster than widening at load (SmolLM-135M shapes
// on a 2-core AMD EPYC: 68 against 48 tokens/s). WeightsF32 widens
// everything, for exact comparison with float32 references.
//
// Chat takes a conversation (package chat's Messages), renders it with the
// checkpoint's chat template (chat_template.jinja, else tokenizer_config.json;
// the GGUF loader passes tokenizer.chat_template to useChatTemplate) exactly
// as transformers' apply_chat_template does, and generates the reply,
// stopping at the template's end-of-turn token, which is found from what the
// template writes after a reply and the tokenizer's special tokens rather
// than from a table of models. WithChatTemplate supplies or replaces one.
//
// Generate streams tokens as they are produced and reports why it stopped
// (max tokens, EOS, a stop string, the context length, cancellation). Its
// sampling is the sampling package's CPU path, keyed by the seed. A *Model is
// safe for concurrent use: weights are shared read-only and every generation
// (and every Session, for callers with their own loop) owns its KV cache.
// Matrix products run on one process-wide worker pool sized by GOMAXPROCS;
// on amd64 with AVX2 and FMA the inner products use assembly kernels, with
// portable Go everywhere else.
//
// The forward pass sits behind an internal backend interface (backend.go):
// the CPU backend here, the GPU backend in model/internal/gpu (WithDevice,
// or WithDeviceMode "auto", "cpu", "gpu"), and the MLX backend
// (backend_mlx.go, WithDeviceMode "mlx": float32 weights as MLX arrays, MLX
// ops per layer, logits sampled on the host). On a GPU the weights stay in their file dtype on the device, the KV
// cache is a pool of fixed-size blocks, logits never leave the device
// (sampling.Sampler draws there), decode steps replay captured graphs of
// their kernels or launch them one by one, whichever the first steps of
// each batch size timed faster (HIPGO_GPU_GRAPHS) and every device failure is the generation's error, the
// runtime's typed one. Batch steps many sequences together (continuous
// batching: they join and leave between steps), on either backend;
// Generate runs one sequence through a batch of its own.
package model

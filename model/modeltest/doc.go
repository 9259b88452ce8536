// Package modeltest writes random llama-family checkpoints (config.json,
// model.safetensors and a byte-level BPE tokenizer.json) in the Hugging Face
// layout, for tests, benchmarks and bad-input cases here and in packages
// built on model (a server's tests need a model too). The weights are drawn
// from a seeded generator, so a Spec always yields the same files; the
// presets cover Llama 3 (GQA, llama3 rope scaling), Qwen2 (q/k/v biases),
// SmolLM-style tied embeddings and SmolLM-135M's full shapes. SimGPU is a
// simulated GPU for running a model's GPU backend in such tests.
package modeltest

// Package chat renders a model's chat template: the Jinja program that
// Hugging Face checkpoints carry in tokenizer_config.json (or
// chat_template.jinja) and GGUF files in tokenizer.chat_template, which turns
// a conversation into the exact prompt text the model was trained on.
//
// The contract is that Render returns byte for byte what transformers'
// apply_chat_template(messages, tokenize=False, add_generation_prompt=...)
// returns for the same template and special tokens: the template sees
// messages (role and content), add_generation_prompt, bos_token and
// eos_token (left undefined when empty, as transformers leaves a None token
// out), tools and documents as none, strftime_now (reading the clock given
// by WithNow) and raise_exception, under Jinja with trim_blocks and
// lstrip_blocks on. A raise_exception in the template is a *RaiseError
// carrying its message; a template that does not parse is an error wrapping
// ErrTemplate.
//
// The renderer is github.com/ardanlabs/jinja (Apache-2.0, pure Go, no
// dependencies), chosen over github.com/nikolalohinski/gonja/v2 and over
// writing a subset: it is built for exactly this job (HF's trim_blocks and
// lstrip_blocks defaults, loop, namespace, tojson, slicing, string methods)
// and renders the real SmolLM2, Qwen2.5, Llama 3.1, Llama 3.2 and Mistral
// Nemo templates byte-identically to transformers on the 50 conversations in
// testdata (gonja matched those too, but brings logrus, pkg/errors and
// json-iterator with it). The library's strftime_now reads the wall clock and
// maps few directives, so this package supplies its own, and its own
// raise_exception so the message comes back as a typed error.
//
// EndOfTurn finds the text a template writes after an assistant's reply
// (<|im_end|> for SmolLM2 and Qwen, <|eot_id|> for Llama 3, </s> for
// Mistral) by rendering a probe conversation, so a caller can stop
// generation there without a table of models.
package chat

//go:build !hipgo_demo_from_disk

package demo

import (
	"embed"
	"io/fs"
)

//go:embed config.json model.safetensors tokenizer.json
var files embed.FS

// FS returns the demo model as a Hugging Face checkpoint directory:
// config.json, model.safetensors and tokenizer.json at its root, for
// model.LoadFS.
func FS() fs.FS { return files }

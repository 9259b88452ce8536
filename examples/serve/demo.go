package main

import "github.com/hipgo/hipgo/model/demo"

// demoModel is the embedded demo model: a small Llama trained on the King
// James Bible (tools/traindemo).
var demoModel = demo.FS

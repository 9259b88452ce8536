//go:build !hipgo_demo

package main

import "io/fs"

// demoModel is nil until model/demo is part of the build.
var demoModel func() fs.FS

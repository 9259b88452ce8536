// Package manifest defines build/manifest.json, the index of the kernel
// artifacts that tools/kernelc writes and package kernels embeds: one entry
// per artifact (module, format, arch, path, size, SHA-256) with the launch
// facts of each kernel in it, derived from the artifact itself by
// kernels/codeobj (HSACO) or kernels/ptx (PTX). It is a package of its own so
// that kernelc can build the manifest without importing package kernels,
// whose go:embed needs the build directory to exist already.
package manifest

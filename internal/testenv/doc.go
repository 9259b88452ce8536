// Package testenv decides, in one place, whether a test that needs something
// from its environment skips or fails when it is missing.
//
// GPU tests skip on a machine without the GPU they need, and fail instead when
// HIPGO_REQUIRE_GPU=1 (every run on the GPU machine sets it). Tests that need
// the host packages CI installs (Debian's ROCm 5.2 libraries, clang-19, lld-19,
// llvm-19) fail instead of skipping when CI=true or HIPGO_REQUIRE_HOST_TOOLS=1
// (which `make test` sets), so CI can never pass by skipping what it can run.
package testenv

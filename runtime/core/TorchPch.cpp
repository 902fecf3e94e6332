// The owner of the one precompiled LibTorch header (<torch/torch.h>) that the
// runtime, analysis, unit-test and bench targets reuse (REUSE_FROM in
// runtime/CMakeLists.txt): GCC spends 40-150 s per target building one, and
// the test command builds the project three times (normal, sanitized,
// runtime-only). Nothing to compile here: the header is the product.

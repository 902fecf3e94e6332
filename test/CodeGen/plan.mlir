// The kernel plan on hand-written mix.fused regions: each input's role
// (row, filter, invariant), hoisting of parameter-only ops, and the reasons
// a region is left to the interpreter, per back end.
// RUN: %mix-opt %s --mix-to-cpp -o /dev/null | FileCheck %s --check-prefix=CPU
// RUN: %mix-opt %s --mix-to-cu -o /dev/null | FileCheck %s --check-prefix=CUDA

// A long conv's [L, C] filter has one run-time dim where rows have two: it
// is a filter, which the anchor indexes itself, not a row.
// CPU: region "conv" (kind long_conv), rows = a->dims[0] * a->dims[1], inputs: row, filter, row
// CPU: extern "C" int64_t mixk_0_saved(const int64_t *dims)
// CPU: return rows * 4 + anchor;
// CPU: mixk::longConvForward(in0, in1, v0m, a->dims[0], a->dims[1], 4, th);
// CPU: mixk::longConvBackward(in0, in1, gv0m, gin0, gin1, a->dims[0], a->dims[1], 4, th);
// CUDA: region "conv" (kind long_conv), {{.*}} inputs: row, filter, row
// CUDA: mixk::longConvForward(in0, in1, v0m, a->dims[0], a->dims[1], 4, stream);
func.func @hyena(%x: tensor<?x?x4xf32>, %h: tensor<?x4xf32>, %g: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %0 = mix.fused "conv" kind "long_conv"(%x, %h, %g) : (tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>, %k: tensor<?x4xf32>, %b: tensor<?x?x4xf32>):
    %1 = mix.long_conv %a, %k {name = "conv"} : (tensor<?x?x4xf32>, tensor<?x4xf32>) -> tensor<?x?x4xf32>
    %2 = mix.mul %1, %b {name = "gated"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    mix.yield %2 : tensor<?x?x4xf32>
  }
  return %0 : tensor<?x?x4xf32>
}

// An op on parameters only is computed once per call (hoisted), not per
// row; its gradient is summed over rows in per-thread partials.
// CPU: region "scale" (kind elementwise), rows = a->dims[0] * a->dims[1], inputs: row, invariant
// CPU: std::vector<float> v0h_(4, 0.f)
// CPU: v0h[j] = mixk::fexp(in1[j]);
// CPU: #pragma omp for schedule(static)
// CPU: v1[j] = in0_r[j] * v0h[j];
// CPU: mixk::Partials P_v0h(th, 4);
// CPU: gin1[j] += g * y;
func.func @scale(%x: tensor<?x?x4xf32>, %w: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %0 = mix.fused "scale" kind "elementwise"(%x, %w) : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>, %p: tensor<4xf32>):
    %1 = mix.exp %p {name = "e"} : (tensor<4xf32>) -> tensor<4xf32>
    %2 = mix.mul %a, %1 {name = "scale"} : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
    mix.yield %2 : tensor<?x?x4xf32>
  }
  return %0 : tensor<?x?x4xf32>
}

// A filter of static length is a parameter (invariant), not the [L, C]
// filter with L >= T the long-conv template indexes: no kernel, on any target.
// CPU: region "conv_static": not generated (long_conv operands (a [B, T, C] input and a [L, C] filter, a region input))
// CUDA: region "conv_static": not generated (long_conv operands
func.func @conv_static(%x: tensor<?x?x4xf32>, %h: tensor<8x4xf32>) -> tensor<?x?x4xf32> {
  %0 = mix.fused "conv_static" kind "long_conv"(%x, %h) : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>, %k: tensor<8x4xf32>):
    %1 = mix.long_conv %a, %k {name = "conv_static"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
    mix.yield %1 : tensor<?x?x4xf32>
  }
  return %0 : tensor<?x?x4xf32>
}

// An op with no kernel code (a matmul) keeps the region on the interpreter.
// CPU: region "proj": not generated (no kernel code for mix.linear)
func.func @proj(%x: tensor<?x?x4xf32>, %w: tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  %0 = mix.fused "proj" kind "elementwise"(%x, %w) : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32> {
  ^bb0(%a: tensor<?x?x4xf32>, %b: tensor<8x4xf32>):
    %1 = mix.linear %a, %b {name = "proj"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
    %2 = mix.silu %1 {name = "act"} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    mix.yield %2 : tensor<?x?x8xf32>
  }
  return %0 : tensor<?x?x8xf32>
}

// Nine outputs: the CPU takes them; CUDA's argument block holds eight.
// CPU: region "many" (kind elementwise)
// CPU: extern "C" void mixk_4_forward
// CUDA: region "many": not generated (more than 24 inputs or 8 outputs (the CUDA argument block))
// CUDA-NOT: mixk_4_forward
func.func @many(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %0:9 = mix.fused "many" kind "elementwise"(%x) : (tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  ^bb0(%a: tensor<?x?x4xf32>):
    %1 = mix.neg %a {name = "n1"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %2 = mix.exp %a {name = "n2"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %3 = mix.sin %a {name = "n3"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %4 = mix.abs %a {name = "n4"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %5 = mix.relu %a {name = "n5"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %6 = mix.silu %a {name = "n6"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %7 = mix.gelu %a {name = "n7"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %8 = mix.sigmoid %a {name = "n8"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %9 = mix.softplus %a {name = "n9"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    mix.yield %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
  }
  return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5, %0#6, %0#7, %0#8 : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

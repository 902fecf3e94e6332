// A shape rule broken only after inference is reported at the op.
// RUN: not %mix-opt %s --mix-shape-inference 2>&1 | FileCheck %s

func.func @model(%x: tensor<?x?x4xf32>) -> tensor<*xf32> {
  %w = mix.param {name = "w", shape = array<i64: 8, 4>, init = "zeros", trainable = true} : tensor<8x4xf32>
  %a = mix.linear %x, %w {name = "a"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<*xf32>
  // CHECK: shape-inference-error.mlir:[[# @LINE + 1]]:8: error: 'mix.linear' op x's last dimension is 8 but must be 4
  %b = mix.linear %a, %w {name = "b"} : (tensor<*xf32>, tensor<8x4xf32>) -> tensor<*xf32>
  return %b : tensor<*xf32>
}

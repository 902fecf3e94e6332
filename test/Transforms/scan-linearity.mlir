// RUN: %mix-opt %s --mix-scan-linearity=remarks=true 2>/dev/null | FileCheck %s
// RUN: %mix-opt %s --mix-scan-linearity=remarks=true 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// The pass on hand-written steps (the DSL-level cases: scan-linearity.test).
//
// Linear attention, S_t = S_{t-1} + k vᵀ, o_t = Sᵀ k: chunkable.
// CHECK-LABEL: func.func @linear
// CHECK: mix.scan "s"{{.*}}linearity = "chunkable", linearity_emits = "o: linear", linearity_states = "S: identity, write outer", num_states = 1
func.func @linear(%k: tensor<?x?x4xf32>, %v: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %y = mix.scan "s"(%k, %v) {num_states = 1 : i64, sliced = array<i64: 1, 1>, state_names = ["S"]} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%S: tensor<?x4x4xf32>, %kt: tensor<?x4xf32>, %vt: tensor<?x4xf32>):
    %a = mix.reshape %kt {keep = 2 : i64, name = "ka", shape = array<i64: 1>} : (tensor<?x4xf32>) -> tensor<?x4x1xf32>
    %b = mix.reshape %vt {keep = 1 : i64, name = "vb", shape = array<i64: 1, 4>} : (tensor<?x4xf32>) -> tensor<?x1x4xf32>
    %w = mix.mul %a, %b {name = "w"} : (tensor<?x4x1xf32>, tensor<?x1x4xf32>) -> tensor<?x4x4xf32>
    %n = mix.add %S, %w {name = "next"} : (tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
    %p = mix.mul %a, %n {name = "p"} : (tensor<?x4x1xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
    %o = mix.sum %p {axis = 1 : i64, name = "o"} : (tensor<?x4x4xf32>) -> tensor<?x4xf32>
    mix.yield %n, %o : tensor<?x4x4xf32>, tensor<?x4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

// A state divided by its own sum: not affine; the remark is at the division.
// REMARK-NOT: remark: scan 's' keeps its sequential form: {{.*}}'o'
// REMARK: scan-linearity.mlir:[[# @LINE + 8]]:10: remark: scan 's' keeps its sequential form: the new S is not affine in the old one: 'next' divides by a value that depends on the state
// CHECK-LABEL: func.func @normalised
// CHECK: mix.scan "s"{{.*}}linearity = "sequential", linearity_emits = "", linearity_reason = "the new S is not affine in the old one: 'next' divides by a value that depends on the state", linearity_states = "", num_states = 1
func.func @normalised(%k: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %y = mix.scan "s"(%k) {num_states = 1 : i64, sliced = array<i64: 1>, state_names = ["S"]} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%S: tensor<?x4xf32>, %kt: tensor<?x4xf32>):
    %a = mix.add %S, %kt {name = "a"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %z = mix.sum %a {axis = 1 : i64, keepdim = true, name = "z"} : (tensor<?x4xf32>) -> tensor<?x1xf32>
    %n = mix.div %a, %z {name = "next"} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
    mix.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

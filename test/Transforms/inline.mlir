// Calls are inlined with the call's scope prefixed to every node name,
// nested calls included; private callees disappear.
// RUN: %mix-opt %s --mix-inline | FileCheck %s

func.func private @gate(%x: tensor<*xf32>) -> tensor<*xf32> {
  %0 = mix.silu %x {name = "act"} : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

func.func private @mixer(%x: tensor<*xf32>) -> tensor<*xf32> {
  %s = mix.call @gate(%x) {scope = "gate"} : (tensor<*xf32>) -> tensor<*xf32>
  %w = mix.param {name = "proj.weight", shape = array<i64: 4, 4>, init = "zeros", trainable = true} : tensor<4x4xf32>
  %y = mix.linear %s, %w {name = "proj"} : (tensor<*xf32>, tensor<4x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// A block: its scope is its caller's prefix.
func.func private @block(%x: tensor<*xf32>) -> tensor<*xf32> {
  %i = mix.tap %x {name = "block_input"} : (tensor<*xf32>) -> tensor<*xf32>
  %m = mix.call @mixer(%i) {scope = "mixer"} : (tensor<*xf32>) -> tensor<*xf32>
  return %m : tensor<*xf32>
}

// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @model
func.func @model(%x: tensor<?x?x4xf32>) -> tensor<*xf32> {
  // CHECK: mix.tap %arg0 {name = "layers[0].block_input"}
  // CHECK: mix.silu {{.*}} {name = "layers[0].mixer.gate.act"}
  // CHECK: mix.param {{.*}} name = "layers[0].mixer.proj.weight"
  // CHECK: %[[L0:.*]] = mix.linear {{.*}} {name = "layers[0].mixer.proj"}
  %0 = mix.call @block(%x) {scope = "layers[0]"} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  // CHECK: mix.tap %[[L0]] {name = "layers[1].block_input"}
  // CHECK: mix.linear {{.*}} {name = "layers[1].mixer.proj"}
  %1 = mix.call @block(%0) {scope = "layers[1]"} : (tensor<*xf32>) -> tensor<*xf32>
  // CHECK-NOT: mix.call
  return %1 : tensor<*xf32>
}

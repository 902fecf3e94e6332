// Canonicalisation drops no-op nodes, but only ones the compiler named:
// user-named nodes are API and survive.
// RUN: %mix-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @identities
func.func @identities(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %one = mix.constant {name = "_const0", value = 1.0 : f32} : tensor<f32>
  %zero = mix.constant {name = "_const1", value = 0.0 : f32} : tensor<f32>
  // CHECK-NOT: name = "_mul2"
  %a = mix.mul %x, %one {name = "_mul2"} : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  // CHECK-NOT: name = "layers[0]._add3"
  %b = mix.add %zero, %x {name = "layers[0]._add3"} : (tensor<f32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.mul %arg0, %{{.*}} {name = "scaled"}
  %c = mix.mul %x, %one {name = "scaled"} : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  // CHECK: return %arg0, %arg0, %{{.*}}
  return %a, %b, %c : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// CHECK-LABEL: func.func @reshapes
func.func @reshapes(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x2x2xf32>) {
  // A compiler-named reshape to its own type disappears.
  // CHECK-NOT: name = "_reshape0"
  %same = mix.reshape %x {name = "_reshape0", keep = 2, shape = array<i64: 4>} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // A chain through a compiler-named reshape reads the original input.
  // CHECK: mix.reshape %arg0 {keep = 2 : i64, name = "heads", shape = array<i64: 2, 2>}
  %flat = mix.reshape %x {name = "_reshape1", keep = 2, shape = array<i64: 1, 4>} : (tensor<?x?x4xf32>) -> tensor<?x?x1x4xf32>
  %heads = mix.reshape %flat {name = "heads", keep = 2, shape = array<i64: 2, 2>} : (tensor<?x?x1x4xf32>) -> tensor<?x?x2x2xf32>
  return %same, %heads : tensor<?x?x4xf32>, tensor<?x?x2x2xf32>
}

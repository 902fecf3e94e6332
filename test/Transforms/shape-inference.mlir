// Shape inference fills unranked results from the model's inputs; B and T
// stay dynamic, and the function signature follows.
// RUN: %mix-opt %s --mix-shape-inference | FileCheck %s

// CHECK-LABEL: func.func @model(%arg0: tensor<?x?xi64>) -> tensor<?x?x10xf32>
func.func @model(%ids: tensor<?x?xi64>) -> tensor<*xf32> {
  %wte = mix.param {name = "wte", shape = array<i64: 10, 4>, init = "normal(0.02)", trainable = true} : tensor<10x4xf32>
  // CHECK: mix.embedding {{.*}} -> tensor<?x?x4xf32>
  %e = mix.embedding %ids, %wte {name = "embed"} : (tensor<?x?xi64>, tensor<10x4xf32>) -> tensor<*xf32>
  %w = mix.param {name = "fc.weight", shape = array<i64: 6, 4>, init = "zeros", trainable = true} : tensor<6x4xf32>
  // CHECK: mix.linear {{.*}} -> tensor<?x?x6xf32>
  %fc = mix.linear %e, %w {name = "fc"} : (tensor<*xf32>, tensor<6x4xf32>) -> tensor<*xf32>
  // CHECK: mix.split {{.*}} -> (tensor<?x?x2xf32>, tensor<?x?x4xf32>)
  %s:2 = mix.split %fc {name = "s", sizes = array<i64: 2, 4>} : (tensor<*xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  // CHECK: mix.reshape {{.*}} -> tensor<?x?x2x2xf32>
  %r = mix.reshape %s#1 {name = "r", keep = 2, shape = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  // CHECK: mix.sum {{.*}} -> tensor<?x?x2xf32>
  %sum = mix.sum %r {name = "sum", axis = -1} : (tensor<*xf32>) -> tensor<*xf32>
  // CHECK: mix.taylor_map {{.*}} -> tensor<?x?x7xf32>
  %phi = mix.taylor_map %sum {name = "phi"} : (tensor<*xf32>) -> tensor<*xf32>
  // CHECK: mix.linear_attention {{.*}} -> tensor<?x?x4xf32>
  %la = mix.linear_attention %phi, %phi, %e {name = "la", state_name = "state"} : (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  // CHECK: mix.unembed {{.*}} -> tensor<?x?x10xf32>
  %logits = mix.unembed %la, %wte {name = "logits"} : (tensor<*xf32>, tensor<10x4xf32>) -> tensor<*xf32>
  return %logits : tensor<*xf32>
}

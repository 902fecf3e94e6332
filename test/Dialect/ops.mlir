// Every op parses, verifies and prints back to the same IR.
// RUN: %mix-opt %s | %mix-opt | FileCheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%ids: tensor<?x?xi64>, %x: tensor<?x?x4xf32>, %x4: tensor<?x?x2x3xf32>,
                   %beta: tensor<?x?x1xf32>) -> tensor<?x?x4xf32> {
  // CHECK: mix.param {init = "normal(0.02)", name = "wte", shape = array<i64: 10, 4>, trainable = true} : tensor<10x4xf32>
  %wte = mix.param {name = "wte", shape = array<i64: 10, 4>, init = "normal(0.02)", trainable = true} : tensor<10x4xf32>
  // CHECK: mix.constant {name = "c", value = 5.000000e-01 : f32} : tensor<f32>
  %c = mix.constant {name = "c", value = 0.5 : f32} : tensor<f32>
  // CHECK: mix.embedding %{{.*}}, %{{.*}} {name = "embed"} : (tensor<?x?xi64>, tensor<10x4xf32>) -> tensor<?x?x4xf32>
  %e = mix.embedding %ids, %wte {name = "embed"} : (tensor<?x?xi64>, tensor<10x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.unembed
  %logits = mix.unembed %e, %wte {name = "logits"} : (tensor<?x?x4xf32>, tensor<10x4xf32>) -> tensor<?x?x10xf32>
  %wpe = mix.param {name = "wpe", shape = array<i64: 16, 4>, init = "normal(0.02)", trainable = true} : tensor<16x4xf32>
  // CHECK: mix.time_slice
  %pos = mix.time_slice %wpe, %x {name = "pos"} : (tensor<16x4xf32>, tensor<?x?x4xf32>) -> tensor<?x4xf32>
  %w = mix.param {name = "fc.weight", shape = array<i64: 8, 4>, init = "normal(0.02)", trainable = true} : tensor<8x4xf32>
  %b = mix.param {name = "fc.bias", shape = array<i64: 8>, init = "zeros", trainable = true} : tensor<8xf32>
  // CHECK: mix.linear %{{.*}}, %{{.*}}, %{{.*}} {name = "fc"}
  %fc = mix.linear %x, %w, %b {name = "fc"} : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK: mix.linear %{{.*}}, %{{.*}} {name = "fc_nobias"}
  %fc2 = mix.linear %x, %w {name = "fc_nobias"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  // CHECK: mix.add
  %add = mix.add %x, %pos {name = "add"} : (tensor<?x?x4xf32>, tensor<?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.sub
  %sub = mix.sub %x, %c {name = "sub"} : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  // CHECK: mix.mul
  %mul = mix.mul %x, %x {name = "mul"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.div
  %div = mix.div %x, %c {name = "div"} : (tensor<?x?x4xf32>, tensor<f32>) -> tensor<?x?x4xf32>
  // CHECK: mix.neg
  %u0 = mix.neg %x {name = "u0"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.abs
  %u1 = mix.abs %x {name = "u1"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.exp
  %u2 = mix.exp %x {name = "u2"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.sin
  %u3 = mix.sin %x {name = "u3"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.silu
  %u4 = mix.silu %x {name = "u4"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.gelu
  %u5 = mix.gelu %x {name = "u5"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.relu
  %u6 = mix.relu %x {name = "u6"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.softplus
  %u7 = mix.softplus %x {name = "u7"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.sigmoid
  %u8 = mix.sigmoid %x {name = "u8"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.tap
  %t = mix.tap %x {name = "block_input"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %g = mix.param {name = "ln.weight", shape = array<i64: 4>, init = "ones", trainable = true} : tensor<4xf32>
  // CHECK: mix.layernorm {{.*}} {eps = 9.99999997E-7 : f32, name = "ln"}
  %ln = mix.layernorm %x, %g, %g {name = "ln", eps = 1.0e-6 : f32} : (tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.rmsnorm
  %rms = mix.rmsnorm %x, %g {name = "rms"} : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.l2norm
  %l2 = mix.l2norm %x {name = "l2"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.split {{.*}} sizes = array<i64: 1, 3>
  %s:2 = mix.split %x {name = "split", sizes = array<i64: 1, 3>} : (tensor<?x?x4xf32>) -> (tensor<?x?x1xf32>, tensor<?x?x3xf32>)
  // CHECK: mix.concat
  %cat = mix.concat %s#1, %s#0 {name = "cat"} : (tensor<?x?x3xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.reshape {{.*}} {keep = 2 : i64, name = "rs", shape = array<i64: 2, 2>}
  %rs = mix.reshape %x {name = "rs", keep = 2, shape = array<i64: 2, 2>} : (tensor<?x?x4xf32>) -> tensor<?x?x2x2xf32>
  // CHECK: mix.permute
  %pm = mix.permute %rs {name = "pm", perm = array<i64: 0, 1, 3, 2>} : (tensor<?x?x2x2xf32>) -> tensor<?x?x2x2xf32>
  // CHECK: mix.sum
  %sm = mix.sum %rs {name = "sm", axis = 3} : (tensor<?x?x2x2xf32>) -> tensor<?x?x2xf32>
  %cw = mix.param {name = "conv.weight", shape = array<i64: 4, 3>, init = "zeros", trainable = true} : tensor<4x3xf32>
  // CHECK: mix.causal_conv
  %cv = mix.causal_conv %x, %cw, %g {name = "conv"} : (tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.long_conv
  %lc = mix.long_conv %x, %wpe {name = "lc"} : (tensor<?x?x4xf32>, tensor<16x4xf32>) -> tensor<?x?x4xf32>
  %sb = mix.param {name = "sb", shape = array<i64: 4, 8>, init = "shift_e1", trainable = true} : tensor<4x8xf32>
  // CHECK: mix.shift_conv
  %sc = mix.shift_conv %x, %sb, %sb {name = "sc"} : (tensor<?x?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %dt = mix.param {name = "dt", shape = array<i64: 2>, init = "zeros", trainable = true} : tensor<2xf32>
  %ar = mix.param {name = "ar", shape = array<i64: 2, 5>, init = "zeros", trainable = true} : tensor<2x5xf32>
  %cc = mix.param {name = "cc", shape = array<i64: 2, 5, 2>, init = "zeros", trainable = true} : tensor<2x5x2xf32>
  // CHECK: mix.diag_ssm {{.*}} {name = "ssm", state_name = "ssm.state"}
  %ds = mix.diag_ssm %x4, %dt, %ar, %ar, %cc, %cc {name = "ssm", state_name = "ssm.state"} : (tensor<?x?x2x3xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5x2xf32>, tensor<2x5x2xf32>) -> tensor<?x?x2x3xf32>
  // CHECK: mix.softmax_attention
  %sa = mix.softmax_attention %x, %x, %fc {name = "sa"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  // CHECK: mix.taylor_map {{.*}} -> tensor<?x?x21xf32>
  %phi = mix.taylor_map %x {name = "phi"} : (tensor<?x?x4xf32>) -> tensor<?x?x21xf32>
  // CHECK: mix.linear_attention
  %la = mix.linear_attention %phi, %phi, %x {name = "la", state_name = "state"} : (tensor<?x?x21xf32>, tensor<?x?x21xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %A = mix.param {name = "A", shape = array<i64: 4, 3>, init = "s4d_real_log", trainable = true} : tensor<4x3xf32>
  %bc:2 = mix.split %x {name = "bc", sizes = array<i64: 1, 3>} : (tensor<?x?x4xf32>) -> (tensor<?x?x1xf32>, tensor<?x?x3xf32>)
  // CHECK: mix.selective_scan
  %ss = mix.selective_scan %x, %x, %A, %bc#1, %bc#1, %g {name = "scan", state_name = "state2"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<?x?x3xf32>, tensor<?x?x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  // CHECK: mix.delta_rule
  %dr = mix.delta_rule %x, %x, %x, %beta {name = "delta", state_name = "state3"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  return %dr : tensor<?x?x4xf32>
}

// CHECK-LABEL: func.func private @callee
func.func private @callee(%a: tensor<*xf32>) -> tensor<*xf32> {
  return %a : tensor<*xf32>
}
// CHECK: mix.call @callee(%{{.*}}) {scope = "mixer"} : (tensor<?x?x4xf32>) -> tensor<*xf32>
func.func @caller(%x: tensor<?x?x4xf32>) -> tensor<*xf32> {
  %0 = mix.call @callee(%x) {scope = "mixer"} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// Interventions round-trip, a DAS patch (das = k) among them.
// CHECK-LABEL: func.func @interventions
// CHECK: mix.patch %{{.*}} {cell = 0 : i64, das = 4 : i64, name = "x@c0", role = "value"}
// CHECK: mix.ablate %{{.*}} {cell = 1 : i64, kind = "zero", name = "x@c1", offset = 1 : i64, role = "key"}
func.func @interventions(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %0 = mix.patch %x {cell = 0 : i64, das = 4 : i64, name = "x@c0", role = "value"} : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %1 = mix.ablate %0 {cell = 1 : i64, kind = "zero", name = "x@c1", offset = 1 : i64, role = "key"} : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %1 : tensor<?x?x16xf32>
}

// A scan: one state S [B, 4], its step S' = S + x_t, emitting S'.
// CHECK-LABEL: func.func @scan
// CHECK: mix.scan "s"(%{{.*}}) {num_states = 1 : i64, sliced = array<i64: 1>, state_names = ["S"]} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<?x4xf32>):
// CHECK: mix.yield %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?x4xf32>
func.func @scan(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %y = mix.scan "s"(%x) {num_states = 1 : i64, sliced = array<i64: 1>, state_names = ["S"]}
      : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%s: tensor<?x4xf32>, %xt: tensor<?x4xf32>):
    %n = mix.add %s, %xt {name = "n"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    mix.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

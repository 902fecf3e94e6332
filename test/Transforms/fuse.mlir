// -mix-fuse: elementwise chains and each mixer primitive's prologue and
// epilogue become mix.fused regions; interventions and order stay intact.
// RUN: %mix-opt %s --mix-fuse | %mix-opt | FileCheck %s

// conv + activation: one region anchored by the conv, named after it.
// CHECK-LABEL: func.func @conv_act
// CHECK: %[[R:.*]] = mix.fused "conv" kind "causal_conv"(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x?x4xf32>, %[[W:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT: %[[C:.*]] = mix.causal_conv %[[A]], %[[W]], %[[B]] {name = "conv"}
// CHECK-NEXT: %[[S:.*]] = mix.silu %[[C]] {name = "act"}
// CHECK-NEXT: mix.yield %[[S]] : tensor<?x?x4xf32>
// CHECK: return %[[R]]
func.func @conv_act(%x: tensor<?x?x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %c = mix.causal_conv %x, %w, %b {name = "conv"} : (tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %s = mix.silu %c {name = "act"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %s : tensor<?x?x4xf32>
}

// Mamba's pattern: conv + SiLU is one region; softplus(Δ) and −exp(A) are the
// scan's prologue, the SiLU(z) gate its epilogue: one primitive per region.
// CHECK-LABEL: func.func @scan_prologue_epilogue
// CHECK: %[[CONV:.*]] = mix.fused "conv" kind "causal_conv"
// CHECK: mix.silu {{.*}} {name = "act"}
// CHECK: mix.yield
// CHECK: %[[SCAN:.*]] = mix.fused "scan" kind "selective_scan"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mix.softplus {{.*}} {name = "delta"}
// CHECK-NEXT: mix.exp {{.*}} {name = "expA"}
// CHECK-NEXT: mix.neg {{.*}} {name = "A"}
// CHECK-NEXT: mix.selective_scan {{.*}} {name = "scan", state_name = "state"}
// CHECK-NEXT: mix.silu {{.*}} {name = "gate"}
// CHECK-NEXT: %[[G:.*]] = mix.mul {{.*}} {name = "gated"}
// CHECK-NEXT: mix.yield %[[G]]
// CHECK: return %[[SCAN]]
func.func @scan_prologue_epilogue(%x: tensor<?x?x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>,
                                  %dt: tensor<?x?x4xf32>, %alog: tensor<4x3xf32>, %bc: tensor<?x?x3xf32>,
                                  %z: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %c = mix.causal_conv %x, %w, %b {name = "conv"} : (tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %act = mix.silu %c {name = "act"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %delta = mix.softplus %dt {name = "delta"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %e = mix.exp %alog {name = "expA"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = mix.neg %e {name = "A"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = mix.selective_scan %act, %delta, %a, %bc, %bc, %b {name = "scan", state_name = "state"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<?x?x3xf32>, tensor<?x?x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %gate = mix.silu %z {name = "gate"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %g = mix.mul %y, %gate {name = "gated"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %g : tensor<?x?x4xf32>
}

// A value an intervention reads stays a node of its own: the patched SiLU is
// not fused, the conv is a region alone (a primitive with a kernel of its
// own), and the chain after the patch is fused.
// CHECK-LABEL: func.func @intervened_value_stays_out
// CHECK: %[[C:.*]] = mix.fused "conv" kind "causal_conv"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mix.causal_conv {{.*}} {name = "conv"}
// CHECK-NEXT: mix.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = mix.silu %[[C]] {name = "act"}
// CHECK-NEXT: %[[P:.*]] = mix.patch %[[S]]
// CHECK-NEXT: %[[F:.*]] = mix.fused "double" kind "elementwise"(%[[P]])
// CHECK: mix.exp {{.*}} {name = "e"}
// CHECK-NEXT: mix.add {{.*}} {name = "double"}
// CHECK-NEXT: mix.yield
// CHECK: return %[[F]]
func.func @intervened_value_stays_out(%x: tensor<?x?x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %c = mix.causal_conv %x, %w, %b {name = "conv"} : (tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %s = mix.silu %c {name = "act"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %p = mix.patch %s {name = "act@c0", cell = 0, role = "key"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %e = mix.exp %p {name = "e"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %d = mix.add %e, %e {name = "double"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %d : tensor<?x?x4xf32>
}

// A region stands where its last op was, so a value read by a non-fused op
// in between must not move later: here `s` is used by the linear before
// `m`, so {s, m} cannot become one region and nothing is fused.
// CHECK-LABEL: func.func @order_is_kept
// CHECK-NOT: mix.fused
// CHECK: mix.silu
// CHECK-NEXT: mix.linear
// CHECK-NEXT: mix.mul
func.func @order_is_kept(%x: tensor<?x?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x?x4xf32> {
  %s = mix.silu %x {name = "s"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %l = mix.linear %s, %w {name = "l"} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %m = mix.mul %s, %l {name = "m"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %m : tensor<?x?x4xf32>
}

// Values used outside the region are all yielded (here the norm's output
// and the gate's), in program order.
// CHECK-LABEL: func.func @two_exports
// CHECK: %[[F:.*]]:2 = mix.fused "g" kind "elementwise"
// CHECK: mix.yield
// CHECK: mix.linear %[[F]]#0
// CHECK: mix.linear %[[F]]#1
func.func @two_exports(%x: tensor<?x?x4xf32>, %n: tensor<4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %r = mix.rmsnorm %x, %n {name = "r"} : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %g = mix.sigmoid %r {name = "g"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %a = mix.linear %r, %w {name = "a"} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %b = mix.linear %g, %w {name = "b"} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  return %a, %b : tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// A DSL scan is a region of its own, kind "scan": its operands as they are
// (%x twice stays two arguments), its neighbours outside.
// CHECK-LABEL: func.func @scan_alone
// CHECK: %[[E:.*]] = mix.exp %arg0
// CHECK-NEXT: %[[R:.*]] = mix.fused "s" kind "scan"(%[[E]], %[[E]])
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x?x4xf32>, %[[B:.*]]: tensor<?x?x4xf32>):
// CHECK-NEXT: %[[S:.*]] = mix.scan "s"(%[[A]], %[[B]])
// CHECK: mix.yield %[[S]] : tensor<?x?x4xf32>
// CHECK: mix.silu %[[R]]
func.func @scan_alone(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %e = mix.exp %x {name = "e"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %y = mix.scan "s"(%e, %e) {num_states = 1 : i64, sliced = array<i64: 1, 1>, state_names = ["S"]} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%S: tensor<?x4xf32>, %a: tensor<?x4xf32>, %b: tensor<?x4xf32>):
    %m = mix.mul %a, %b {name = "s.m"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %n = mix.add %S, %m {name = "s.n"} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    mix.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
  }
  %o = mix.silu %y {name = "o"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %o : tensor<?x?x4xf32>
}

// Softmax attention between two matmuls has no fusible neighbour: it is a
// region alone, for its kernel; a lone primitive without one (diag_ssm)
// stays a plain op.
// CHECK-LABEL: func.func @lone_primitives
// CHECK: %[[A:.*]] = mix.fused "attn" kind "softmax_attention"(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mix.softmax_attention {{.*}} {name = "attn"}
// CHECK-NEXT: mix.yield
// CHECK-NOT: mix.fused
// CHECK: mix.diag_ssm {{.*}} {name = "ssm", state_name = "s"}
func.func @lone_primitives(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>, %dt: tensor<2xf32>, %ar: tensor<2x4xf32>, %ai: tensor<2x4xf32>, %b: tensor<2x4x2xf32>, %c: tensor<2x4x2xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x2x4xf32>) {
  %a = mix.softmax_attention %q, %k, %v {name = "attn"} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %x = mix.reshape %a {name = "heads", keep = 2, shape = array<i64: 2, 4>} : (tensor<?x?x8xf32>) -> tensor<?x?x2x4xf32>
  %y = mix.diag_ssm %x, %dt, %ar, %ai, %b, %c {name = "ssm", state_name = "s"} : (tensor<?x?x2x4xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x2xf32>, tensor<2x4x2xf32>) -> tensor<?x?x2x4xf32>
  return %a, %y : tensor<?x?x8xf32>, tensor<?x?x2x4xf32>
}

// Mamba without its conv: the SiLU feeds x_proj (a linear, not fused) long
// before the scan, and the scan too. It stays outside, before the region,
// which reads it as an input and keeps the scan's prologue and epilogue.
// CHECK-LABEL: func.func @early_export_stays_outside
// CHECK: %[[ACT:.*]] = mix.silu %arg0 {name = "act"}
// CHECK-NEXT: %[[P:.*]] = mix.linear %[[ACT]]
// CHECK: %[[SCAN:.*]] = mix.fused "scan" kind "selective_scan"({{.*}}%[[ACT]],
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mix.softplus {{.*}} {name = "delta"}
// CHECK: mix.selective_scan {{.*}} {name = "scan", state_name = "state"}
// CHECK-NEXT: mix.silu {{.*}} {name = "gate"}
// CHECK-NEXT: %[[G:.*]] = mix.mul {{.*}} {name = "gated"}
// CHECK-NEXT: mix.yield %[[G]]
// CHECK: return %[[SCAN]], %[[P]]
func.func @early_export_stays_outside(%x: tensor<?x?x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>,
                                      %dt: tensor<?x?x4xf32>, %alog: tensor<4x3xf32>, %bc: tensor<?x?x3xf32>,
                                      %z: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %act = mix.silu %x {name = "act"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %proj = mix.linear %act, %w {name = "x_proj"} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %delta = mix.softplus %dt {name = "delta"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %e = mix.exp %alog {name = "expA"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = mix.neg %e {name = "A"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = mix.selective_scan %act, %delta, %a, %bc, %bc, %b {name = "scan", state_name = "state"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<?x?x3xf32>, tensor<?x?x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %gate = mix.silu %z {name = "gate"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %g = mix.mul %y, %gate {name = "gated"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %g, %proj : tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// The scan's prologue value `A` also feeds a linear before the scan, and it
// reads another member (not a leading op): the prologue is a region of its
// own and the scan, without it, one alone (its kernel), not a plain op.
// CHECK-LABEL: func.func @anchor_left_alone
// CHECK: %[[P:.*]] = mix.fused "A" kind "elementwise"
// CHECK: mix.linear %[[P]]
// CHECK: mix.fused "scan" kind "selective_scan"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: mix.selective_scan
// CHECK-NOT: unfused
// CHECK-NEXT: mix.yield
func.func @anchor_left_alone(%x: tensor<?x?x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>, %dt: tensor<?x?x4xf32>,
                             %alog: tensor<4x3xf32>, %bc: tensor<?x?x3xf32>) -> (tensor<?x?x4xf32>, tensor<4x4xf32>) {
  %e = mix.exp %alog {name = "expA"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = mix.neg %e {name = "A"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = mix.linear %a, %w {name = "l"} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  %y = mix.selective_scan %x, %dt, %a, %bc, %bc, %b {name = "scan", state_name = "state"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<?x?x3xf32>, tensor<?x?x3xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  return %y, %l : tensor<?x?x4xf32>, tensor<4x4xf32>
}

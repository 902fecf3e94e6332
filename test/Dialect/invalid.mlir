// Every verifier error of the mix dialect.
// RUN: %mix-opt %s -split-input-file -verify-diagnostics

func.func @param_nonpositive() {
  // expected-error @+1 {{shape dimensions must be positive, got 0}}
  %w = mix.param {name = "w", shape = array<i64: 0, 4>, init = "zeros", trainable = true} : tensor<0x4xf32>
  return
}

// -----

func.func @param_type_mismatch() {
  // expected-error @+1 {{result #0 has type 'tensor<4x4xf32>' but its operands imply 'tensor<8x4xf32>'}}
  %w = mix.param {name = "w", shape = array<i64: 8, 4>, init = "zeros", trainable = true} : tensor<4x4xf32>
  return
}

// -----

func.func @embedding_float_ids(%ids: tensor<?x?xf32>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{operand #0 must be tensor of 64-bit signless integer values}}
  %e = mix.embedding %ids, %t {name = "e"} : (tensor<?x?xf32>, tensor<10x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @embedding_ids_rank(%ids: tensor<?xi64>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{expects ids of rank 2, got 'tensor<?xi64>'}}
  %e = mix.embedding %ids, %t {name = "e"} : (tensor<?xi64>, tensor<10x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @unembed_width(%x: tensor<?x?x5xf32>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{x's last dimension is 5 but must be 4}}
  %e = mix.unembed %x, %t {name = "e"} : (tensor<?x?x5xf32>, tensor<10x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @time_slice_table_rank(%t: tensor<16xf32>, %x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{expects table of rank 2, got 'tensor<16xf32>'}}
  %p = mix.time_slice %t, %x {name = "p"} : (tensor<16xf32>, tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @time_slice_like_rank(%t: tensor<16x4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{expects `like` of rank >= 2 ([B, T, ...])}}
  %p = mix.time_slice %t, %x {name = "p"} : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @linear_in_features(%x: tensor<?x?x5xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{x's last dimension is 5 but must be 4}}
  %y = mix.linear %x, %w {name = "fc"} : (tensor<?x?x5xf32>, tensor<8x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{expects weight of rank 2, got 'tensor<4xf32>'}}
  %y = mix.linear %x, %w {name = "fc"} : (tensor<?x?x4xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bias size is 4 but must be 8}}
  %y = mix.linear %x, %w, %b {name = "fc"} : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @linear_result(%x: tensor<?x?x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{result #0 has type 'tensor<?x?x4xf32>' but its operands imply 'tensor<?x?x8xf32>'}}
  %y = mix.linear %x, %w {name = "fc"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
  return
}

// -----

func.func @no_broadcast(%a: tensor<?x?x4xf32>, %b: tensor<?x?x3xf32>) {
  // expected-error @+1 {{operands 'tensor<?x?x4xf32>' and 'tensor<?x?x3xf32>' do not broadcast}}
  %y = mix.add %a, %b {name = "s"} : (tensor<?x?x4xf32>, tensor<?x?x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @norm_weight(%x: tensor<?x?x4xf32>, %w: tensor<3xf32>) {
  // expected-error @+1 {{weight/bias size is 3 but must be 4}}
  %y = mix.rmsnorm %x, %w {name = "n"} : (tensor<?x?x4xf32>, tensor<3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{sum of split sizes is 5 but must be 4}}
  %s:2 = mix.split %x {name = "s", sizes = array<i64: 2, 3>} : (tensor<?x?x4xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_count(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{has 3 sizes but 2 results}}
  %s:2 = mix.split %x {name = "s", sizes = array<i64: 1, 1, 2>} : (tensor<?x?x4xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_nonpositive(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{split sizes must be positive, got 0}}
  %s:2 = mix.split %x {name = "s", sizes = array<i64: 0, 4>} : (tensor<?x?x4xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{expects at least one input}}
  %c = mix.concat {name = "c"} : () -> tensor<*xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<?x?x4xf32>, %b: tensor<?x4xf32>) {
  // expected-error @+1 {{expects inputs of one rank}}
  %c = mix.concat %a, %b {name = "c"} : (tensor<?x?x4xf32>, tensor<?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) {
  // expected-error @+1 {{disagrees with the others in dimension 1}}
  %c = mix.concat %a, %b {name = "c"} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_keep(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{keeps 4 dimensions of a rank-3 tensor}}
  %r = mix.reshape %x {name = "r", keep = 4, shape = array<i64: 4>} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{can only re-lay out static dimensions}}
  %r = mix.reshape %x {name = "r", keep = 1, shape = array<i64: 4>} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{reshapes 4 elements into 6}}
  %r = mix.reshape %x {name = "r", keep = 2, shape = array<i64: 2, 3>} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_target(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{target dimensions must be positive, got -1}}
  %r = mix.reshape %x {name = "r", keep = 2, shape = array<i64: -1, 4>} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @permute_length(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{permutation has 2 entries for a rank-3 tensor}}
  %p = mix.permute %x {name = "p", perm = array<i64: 0, 1>} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @permute_repeat(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{is not a permutation of 0..2}}
  %p = mix.permute %x {name = "p", perm = array<i64: 0, 1, 1>} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @sum_axis(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 3}}
  %s = mix.sum %x {name = "s", axis = 3} : (tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{expects x of rank 3, got 'tensor<?x4xf32>'}}
  %y = mix.causal_conv %x, %w {name = "c"} : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<?x?x4xf32>, %w: tensor<5x3xf32>) {
  // expected-error @+1 {{weight's channel count is 5 but must be 4}}
  %y = mix.causal_conv %x, %w {name = "c"} : (tensor<?x?x4xf32>, tensor<5x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<?x?x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias size is 3 but must be 4}}
  %y = mix.causal_conv %x, %w, %b {name = "c"} : (tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @long_conv_channels(%x: tensor<?x?x4xf32>, %h: tensor<16x3xf32>) {
  // expected-error @+1 {{filter's channel count is 3 but must be 4}}
  %y = mix.long_conv %x, %h {name = "c"} : (tensor<?x?x4xf32>, tensor<16x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @shift_conv_shapes(%x: tensor<?x?x4xf32>, %b: tensor<4x8xf32>, %c: tensor<4x6xf32>) {
  // expected-error @+1 {{expects b and c of one shape}}
  %y = mix.shift_conv %x, %b, %c {name = "s"} : (tensor<?x?x4xf32>, tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @diag_ssm_imag(%x: tensor<?x?x2x3xf32>, %dt: tensor<2xf32>, %ar: tensor<2x5xf32>,
                         %ai: tensor<2x4xf32>, %c: tensor<2x5x2xf32>) {
  // expected-error @+1 {{expects a_imag of the shape of log_a_real}}
  %y = mix.diag_ssm %x, %dt, %ar, %ai, %c, %c {name = "s", state_name = "st"} : (tensor<?x?x2x3xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2x4xf32>, tensor<2x5x2xf32>, tensor<2x5x2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @diag_ssm_heads(%x: tensor<?x?x2x3xf32>, %dt: tensor<3xf32>, %ar: tensor<2x5xf32>,
                          %c: tensor<2x5x2xf32>) {
  // expected-error @+1 {{log_dt size is 3 but must be 2}}
  %y = mix.diag_ssm %x, %dt, %ar, %ar, %c, %c {name = "s", state_name = "st"} : (tensor<?x?x2x3xf32>, tensor<3xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5x2xf32>, tensor<2x5x2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @diag_ssm_complex(%x: tensor<?x?x2x3xf32>, %dt: tensor<2xf32>, %ar: tensor<2x5xf32>,
                            %c: tensor<2x5x3xf32>) {
  // expected-error @+1 {{c's last dimension (re, im) is 3 but must be 2}}
  %y = mix.diag_ssm %x, %dt, %ar, %ar, %c, %c {name = "s", state_name = "st"} : (tensor<?x?x2x3xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @diag_ssm_b(%x: tensor<?x?x2x3xf32>, %dt: tensor<2xf32>, %ar: tensor<2x5xf32>,
                      %b: tensor<2x4x2xf32>, %c: tensor<2x5x2xf32>) {
  // expected-error @+1 {{expects b of the shape of c}}
  %y = mix.diag_ssm %x, %dt, %ar, %ar, %b, %c {name = "s", state_name = "st"} : (tensor<?x?x2x3xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x4x2xf32>, tensor<2x5x2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @attention_features(%q: tensor<?x?x4xf32>, %k: tensor<?x?x3xf32>, %v: tensor<?x?x4xf32>) {
  // expected-error @+1 {{k's feature size is 3 but must be 4}}
  %y = mix.softmax_attention %q, %k, %v {name = "a"} : (tensor<?x?x4xf32>, tensor<?x?x3xf32>, tensor<?x?x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @attention_time(%q: tensor<2x8x4xf32>, %k: tensor<2x7x4xf32>, %v: tensor<2x8x4xf32>) {
  // expected-error @+1 {{k has [B, T] = [2, 7], which disagrees with the other inputs}}
  %y = mix.softmax_attention %q, %k, %v {name = "a"} : (tensor<2x8x4xf32>, tensor<2x7x4xf32>, tensor<2x8x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @taylor_dynamic(%x: tensor<?x?x?xf32>) {
  // expected-error @+1 {{expects a static feature dimension}}
  %y = mix.taylor_map %x {name = "t"} : (tensor<?x?x?xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @scan_state(%x: tensor<?x?x4xf32>, %a: tensor<4x3xf32>, %b: tensor<?x?x2xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{b's state size is 2 but must be 3}}
  %y = mix.selective_scan %x, %x, %a, %b, %b, %d {name = "s", state_name = "st"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x3xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @delta_beta(%x: tensor<?x?x4xf32>, %beta: tensor<?x?x2xf32>) {
  // expected-error @+1 {{beta's last dimension is 2 but must be 1}}
  %y = mix.delta_rule %x, %x, %x, %beta {name = "d", state_name = "st"} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @fused_arity(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{has 1 inputs but its body takes 2 arguments}}
  %f = mix.fused "f" kind "elementwise"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>):
    mix.yield %a : tensor<?x?x4xf32>
  }
  return %f : tensor<?x?x4xf32>
}

// -----

func.func @fused_yield_types(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{yields 2 values whose types differ from its 1 results}}
  %f = mix.fused "f" kind "elementwise"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>):
    mix.yield %a, %a : tensor<?x?x4xf32>, tensor<?x?x4xf32>
  }
  return %f : tensor<?x?x4xf32>
}

// -----

func.func @fused_no_kind(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{needs a kind}}
  %f = mix.fused "f" kind ""(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>):
    mix.yield %a : tensor<?x?x4xf32>
  }
  return %f : tensor<?x?x4xf32>
}

// -----

func.func @fused_scan_without_scan(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{of kind scan must hold one mix.scan of its arguments, in order, and yield its results}}
  %f = mix.fused "f" kind "scan"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%a: tensor<?x?x4xf32>):
    %e = mix.exp %a {name = "e"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    mix.yield %e : tensor<?x?x4xf32>
  }
  return %f : tensor<?x?x4xf32>
}

// -----

func.func @yield_outside_fused(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{expects parent op to be one of 'mix.fused, mix.scan'}}
  mix.yield %x : tensor<?x?x4xf32>
}

// -----

func.func @patch_das_negative(%x: tensor<?x?x16xf32>) {
  // expected-error @+1 {{das -1 is negative (0: a whole-vector patch)}}
  %y = mix.patch %x {cell = 0 : i64, das = -1 : i64, name = "p", role = "value"} : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @patch_das_too_wide(%x: tensor<?x?x4x2xf32>) {
  // expected-error @+1 {{das 9 exceeds the 8 values a position holds}}
  %y = mix.patch %x {cell = 0 : i64, das = 9 : i64, name = "p", role = "value"} : (tensor<?x?x4x2xf32>) -> tensor<?x?x4x2xf32>
  return
}

// -----

func.func @patch_das_with_channels(%x: tensor<?x?x16xf32>) {
  // expected-error @+1 {{das learns its own subspace of the whole vector; it takes no channel range or head}}
  %y = mix.patch %x {cell = 0 : i64, das = 2 : i64, lo = 0 : i64, hi = 4 : i64, name = "p", role = "value"} : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @patch_das_all(%x: tensor<?x?x16xf32>) {
  // expected-error @+1 {{das acts at one position a document, not 'all'}}
  %y = mix.patch %x {cell = 0 : i64, das = 2 : i64, name = "p", role = "all"} : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @scan_state_type(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{state 0 ('S') is 'tensor<?x4x4xf32>' but its next value is 'tensor<?x4xf32>'}}
  %y = mix.scan "s"(%x) {num_states = 1 : i64, sliced = array<i64: 1>, state_names = ["S"]}
      : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%s: tensor<?x4x4xf32>, %xt: tensor<?x4xf32>):
    mix.yield %xt, %xt : tensor<?x4xf32>, tensor<?x4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

// -----

func.func @scan_sliced_arg(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{input 0 'tensor<?x?x4xf32>' is sliced over time, so its body argument should be 'tensor<?x4xf32>', not 'tensor<?x?x4xf32>'}}
  %y = mix.scan "s"(%x) {num_states = 0 : i64, sliced = array<i64: 1>, state_names = []}
      : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%xt: tensor<?x?x4xf32>):
    mix.yield %xt : tensor<?x?x4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

// -----

func.func @scan_no_sequence(%w: tensor<4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{slices no input over time: its length is unknown}}
  %y = mix.scan "s"(%w) {num_states = 0 : i64, sliced = array<i64: 0>, state_names = []}
      : (tensor<4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%wt: tensor<4xf32>):
    mix.yield %wt : tensor<4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

// -----

func.func @scan_yield_count(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{yields 1 values for 1 states and 1 results}}
  %y = mix.scan "s"(%x) {num_states = 1 : i64, sliced = array<i64: 1>, state_names = ["S"]}
      : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  ^bb0(%s: tensor<?x4xf32>, %xt: tensor<?x4xf32>):
    mix.yield %xt : tensor<?x4xf32>
  }
  return %y : tensor<?x?x4xf32>
}

// -----

func.func @state_edit_reader_unknown() {
  // expected-error @+1 {{reader 'readout' is neither next nor output}}
  mix.state_edit "s@c0" on "r" {cell = 0 : i64, role = "key", kind = "patch", reader = "readout"}
  return
}

// -----

func.func @state_edit_reader_on_scan() {
  // expected-error @+1 {{reader applies to a built-in recurrence's state; a scan's state is read by its next step only}}
  mix.state_edit "s@c0" on "r" {cell = 0 : i64, role = "key", kind = "patch", state = "S", reader = "next"}
  return
}

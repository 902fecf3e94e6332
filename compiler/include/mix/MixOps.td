//===- MixOps.td - mix dialect operations ------------------*- tablegen -*-===//
//
// One op per primitive of the mixer DSL. Shapes in the summaries name
// dimensions: B batch, T time, D/C channels, N state size, V vocabulary.
// Each shaped op has one C++ shape rule (`shapeRule`), used both by the
// verifier (when operands are ranked) and by shape inference.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_OPS
#define MIX_OPS

include "mix/MixDialect.td"
include "mix/ShapeInferenceInterface.td"
include "mix/ElementCodeInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Verifies the op's shape rule against its result types once operands are ranked.
def HasShapeRule : NativeOpTrait<"HasShapeRule"> {
  let cppNamespace = "::mix::OpTrait";
}

// Op categories, asked by -mix-fuse and the kernel emitter instead of lists
// of op names: adding an op to a category is one line here.
//   PerElement: each output element depends on the same element of each
//     operand (after broadcasting); fused into any neighbour's loop.
//   PerRow: each output position depends on the same position of the
//     operands, over the last dimension (norms, feature maps).
//   MixerAnchor: a sequence-mixer primitive (mixes across time); anchors at
//     most one fused region.
//   GeneratedAnchor: a MixerAnchor with forward and backward kernels in
//     CodeGen/templates (CPU and CUDA); others run on LibTorch.
def Mix_PerElement : NativeOpTrait<"PerElement"> { let cppNamespace = "::mix::OpTrait"; }
def Mix_PerRow : NativeOpTrait<"PerRow"> { let cppNamespace = "::mix::OpTrait"; }
def Mix_MixerAnchor : NativeOpTrait<"MixerAnchor"> { let cppNamespace = "::mix::OpTrait"; }
def Mix_GeneratedAnchor : NativeOpTrait<"GeneratedAnchor"> { let cppNamespace = "::mix::OpTrait"; }

class Mix_ShapedOp<string mnemonic, list<Trait> traits = []> :
    Mix_Op<mnemonic, !listconcat(traits,
        [Pure, HasShapeRule, ShapeInferenceOpInterface])> {
  code shapeRuleDecl = [{
    /// Result types from ranked operand types; emits an error and fails when
    /// the operands break this op's shape rules.
    ::mlir::LogicalResult shapeRule(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes);
  }];
  let extraClassDeclaration = shapeRuleDecl;
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Mix_ParamOp : Mix_ShapedOp<"param"> {
  let flops = Mix_NoFlops;
  let summary = "a model parameter (or frozen buffer) with an init rule";
  let description = [{
    `init` names the initialisation rule the runtime applies, e.g.
    `normal(0.02)`, `zeros`, `ones`, `uniform(-0.1,0.1)`, `s4d_real_log`.
    Frozen buffers have `trainable = false` and do not count as parameters.

    ```mlir
    %w = mix.param {name = "mixer.in_proj.weight", shape = array<i64: 128, 64>,
                    init = "normal(0.02)", trainable = true} : tensor<128x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, DenseI64ArrayAttr:$shape, StrAttr:$init,
                       BoolAttr:$trainable);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Mix_ConstantOp : Mix_ShapedOp<"constant"> {
  let flops = Mix_NoFlops;
  let summary = "a scalar f32 constant (rank-0 tensor)";
  let arguments = (ins StrAttr:$name, F32Attr:$value);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Mix_TimeSliceOp : Mix_ShapedOp<"time_slice"> {
  let flops = Mix_NoFlops;
  let summary = "first T rows of a [L, C] table, T taken from `like` [B, T, ...]";
  let description = [{
    Used for learned absolute positions and implicit-filter inputs:
    `table[:T]` where T is the time dimension of `like`. Result [T, C].
  }];
  let arguments = (ins StrAttr:$name, F32Tensor:$table, AnyTensor:$like);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$table `,` $like attr-dict `:` functional-type(operands, results)";
}

def Mix_EmbeddingOp : Mix_ShapedOp<"embedding"> {
  let flops = Mix_NoFlops;
  let batching = "gather";
  let summary = "token embedding: ids [B, T] (i64), table [V, D] -> [B, T, D]";
  let arguments = (ins StrAttr:$name, I64Tensor:$ids, F32Tensor:$table);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$ids `,` $table attr-dict `:` functional-type(operands, results)";
}

def Mix_UnembedOp : Mix_ShapedOp<"unembed"> {
  let batching = "matmul";
  // 2·rows·d·V; the trainer reads `readoutRows` positions only.
  let flops = [{
    const double rows = s.readoutRows >= 0 ? static_cast<double>(s.readoutRows) : s.rows(0);
    return 2 * rows * s.dim(0, 1) * s.dim(1, 2);
  }];
  let summary = "tied LM head: x [..., D], table [V, D] -> logits [..., V] = x tableᵀ";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$table);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $table attr-dict `:` functional-type(operands, results)";
}

def Mix_LinearOp : Mix_ShapedOp<"linear"> {
  let batching = "matmul";
  // 2·rows·in·out, + rows·out for the bias.
  let flops = [{
    return 2 * s.rows(0) * s.dim(0, 1) * (s.out.empty() ? 0 : static_cast<double>(s.out.back())) +
           (s.in.size() > 2 ? s.outNumel() : 0);
  }];
  let summary = "affine map: x [..., I], weight [O, I], bias [O] -> [..., O]";
  let description = [{ y = x Wᵀ + b, as `torch.nn.Linear`; the bias is optional. }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$weight,
                       Optional<F32Tensor>:$bias);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// A per-element op with its formula in C++ (ElementCodeInterface.td):
// `fwd` in $0/$1, `grads` one expression per operand in a, b, y, g;
// `costly` when `fwd` calls a function worth keeping over recomputing.
class Mix_ElementCode<string fwd, list<string> grads, bit costly = 0> {
  code elementCode = [{
    static ::llvm::StringRef cppForward() { return "}] # fwd # [{"; }
    static bool cppCostly() { return }] # !if(costly, "true", "false") # [{; }
    static ::llvm::StringRef cppGradient(unsigned i) {
      static const char *const grads[] = {"}] # !interleave(grads, "\", \"") # [{"};
      return i < std::size(grads) ? grads[i] : "";
    }
  }];
}

class Mix_BinaryOp<string mnemonic, string formula, string fwd, string ga, string gb>
    : Mix_ShapedOp<mnemonic, [Mix_PerElement, ElementCodeOpInterface]>,
      Mix_ElementCode<fwd, [ga, gb]> {
  let summary = "elementwise " # formula # " with trailing-dimension broadcasting";
  let batching = "broadcast";
  let arguments = (ins StrAttr:$name, F32Tensor:$lhs, F32Tensor:$rhs);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = shapeRuleDecl # elementCode;
}

def Mix_AddOp : Mix_BinaryOp<"add", "a + b", "$0 + $1", "g", "g"> { let hasCanonicalizer = 1; }
def Mix_SubOp : Mix_BinaryOp<"sub", "a - b", "$0 - $1", "g", "-g">;
def Mix_MulOp : Mix_BinaryOp<"mul", "a * b", "$0 * $1", "g * b", "g * a"> { let hasCanonicalizer = 1; }
def Mix_DivOp : Mix_BinaryOp<"div", "a / b", "$0 / $1", "g / b", "-g * a / (b * b)">;

class Mix_UnaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : Mix_ShapedOp<mnemonic, traits> {
  let summary = "elementwise " # formula;
  let batching = "broadcast";
  let arguments = (ins StrAttr:$name, F32Tensor:$x);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

class Mix_ElementOp<string mnemonic, string formula, string fwd, string grad, bit costly = 0>
    : Mix_UnaryOp<mnemonic, formula, [Mix_PerElement, ElementCodeOpInterface]>,
      Mix_ElementCode<fwd, [grad], costly> {
  let extraClassDeclaration = shapeRuleDecl # elementCode;
}

def Mix_NegOp : Mix_ElementOp<"neg", "-x", "-($0)", "-g">;
def Mix_AbsOp : Mix_ElementOp<"abs", "|x|", "std::fabs($0)", "g * (a > 0.f ? 1.f : (a < 0.f ? -1.f : 0.f))">;
def Mix_ExpOp : Mix_ElementOp<"exp", "exp(x)", "mixk::fexp($0)", "g * y", 1>;
def Mix_SinOp : Mix_ElementOp<"sin", "sin(x)", "std::sin($0)", "g * std::cos(a)", 1>;
def Mix_SiluOp : Mix_ElementOp<"silu", "x * sigmoid(x)", "($0) * mixk::sigmoid($0)",
                               "g * mixk::sigmoid(a) * (1.f + a * (1.f - mixk::sigmoid(a)))", 1>;
def Mix_GeluOp : Mix_ElementOp<"gelu", "exact (erf) GELU", "mixk::gelu($0)", "g * mixk::geluGrad(a)", 1>;
def Mix_ReluOp : Mix_ElementOp<"relu", "max(x, 0)", "std::max($0, 0.f)", "(a > 0.f ? g : 0.f)">;
def Mix_SoftplusOp : Mix_ElementOp<"softplus", "log(1 + exp(x))", "mixk::softplus($0)",
                                   "g * (a > 20.f ? 1.f : mixk::sigmoid(a))", 1>;
def Mix_SigmoidOp : Mix_ElementOp<"sigmoid", "1 / (1 + exp(-x))", "mixk::sigmoid($0)", "g * y * (1.f - y)", 1>;

def Mix_TapOp : Mix_UnaryOp<"tap", "identity that names a value"> {
  let flops = Mix_NoFlops;
  let description = [{
    Gives a value a name of its own (`layers[0].mixer_output`), e.g. the
    result of a mixer call or an alias such as `let block_input = x`.
    Taps are where interventions attach; they lower to nothing.
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

def Mix_LayerNormOp : Mix_ShapedOp<"layernorm", [Mix_PerRow]> {
  let batching = "norm_affine";
  let flops = [{ return 5 * s.outNumel(); }];
  let summary = "LayerNorm over the last dim with affine weight and bias [D]";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$weight,
                       F32Tensor:$bias, DefaultValuedAttr<F32Attr, "1e-5">:$eps);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $weight `,` $bias attr-dict `:` functional-type(operands, results)";
}

def Mix_RMSNormOp : Mix_ShapedOp<"rmsnorm", [Mix_PerRow]> {
  let batching = "norm_affine";
  let flops = [{ return 5 * s.outNumel(); }];
  let summary = "RMSNorm over the last dim: x / sqrt(mean(x²) + eps) * weight";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$weight,
                       DefaultValuedAttr<F32Attr, "1e-5">:$eps);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` functional-type(operands, results)";
}

def Mix_L2NormOp : Mix_ShapedOp<"l2norm", [Mix_PerRow]> {
  let flops = [{ return 5 * s.outNumel(); }];
  let summary = "x · rsqrt(Σx² + eps) over the last dim (as fla's l2norm)";
  let arguments = (ins StrAttr:$name, F32Tensor:$x,
                       DefaultValuedAttr<F32Attr, "1e-6">:$eps);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def Mix_SplitOp : Mix_ShapedOp<"split"> {
  let flops = Mix_NoFlops;
  let summary = "split the last dim into pieces of the given sizes";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<F32Tensor>:$results);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Mix_ConcatOp : Mix_ShapedOp<"concat"> {
  let flops = Mix_NoFlops;
  let summary = "concatenate along the last dim";
  let arguments = (ins StrAttr:$name, Variadic<F32Tensor>:$inputs);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Mix_ReshapeOp : Mix_ShapedOp<"reshape"> {
  let flops = Mix_NoFlops;
  let summary = "keep the first `keep` dims, reshape the rest to `shape`";
  let description = [{
    B and T are only known at run time, so a reshape keeps a prefix of the
    dimensions (usually [B, T]) and re-lays out the static trailing ones:
    `[B, T, 64] -> [B, T, 32, 2]` is `keep = 2, shape = [32, 2]`.
  }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, I64Attr:$keep,
                       DenseI64ArrayAttr:$shape);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Mix_PermuteOp : Mix_ShapedOp<"permute"> {
  let flops = Mix_NoFlops;
  let summary = "permute dimensions: result dim i is input dim perm[i]";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Mix_SumOp : Mix_ShapedOp<"sum"> {
  let flops = [{ return s.numel(0); }];
  let summary = "sum over one axis (negative axes count from the end)";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

def Mix_CausalConvOp : Mix_ShapedOp<"causal_conv", [Mix_MixerAnchor, Mix_GeneratedAnchor]> {
  let batching = "channels";
  // 2·K per output, + 1 for the bias.
  let flops = [{ return 2 * s.outNumel() * s.dim(1, 1) + (s.in.size() > 2 ? s.outNumel() : 0); }];
  let summary = "depthwise causal short conv: x [B, T, C], weight [C, K], bias [C]";
  let description = [{
    y[b,t,c] = bias[c] + Σ_{j<K} weight[c,j] · x[b, t−K+1+j, c] (zero before t=0),
    i.e. `Conv1d(C, C, K, groups=C, padding=K−1)` truncated to T outputs.
  }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$weight,
                       Optional<F32Tensor>:$bias);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Mix_LongConvOp : Mix_ShapedOp<"long_conv", [Mix_MixerAnchor, Mix_GeneratedAnchor]> {
  let flops = [{ return causalLongConvFlops(s.numel(0) / static_cast<double>(s.time), s.time); }];
  let summary = "causal long conv with a [L, C] filter (L ≥ T), by FFT";
  let description = [{ y[b,t,c] = Σ_{s≤t} h[s,c] · x[b,t−s,c], computed with FFTs of size 2T. }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$filter);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $filter attr-dict `:` functional-type(operands, results)";
}

def Mix_ShiftConvOp : Mix_ShapedOp<"shift_conv"> {
  let flops = [{ return causalLongConvFlops(s.numel(0) / static_cast<double>(s.time), s.time); }];
  let summary = "H3 shift SSM: causal conv with the cross-correlation of B and C as kernel";
  let description = [{
    x [B, T, C]; b, c [C, N]. The kernel is the linear cross-correlation
    K[l] = Σ_m b[m]·c[m+l] (FFTs of size 2N, as in zoology; protocol §3.5
    step 2), zero past N; it equals c when b = e₁; y = K ∗ x (causal).
  }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, F32Tensor:$b, F32Tensor:$c);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $b `,` $c attr-dict `:` functional-type(operands, results)";
}

def Mix_DiagSSMOp : Mix_ShapedOp<"diag_ssm"> {
  let flops = [{ return causalLongConvFlops(s.numel(0) / static_cast<double>(s.time), s.time); }];
  let stateRefusal = "its state is implicit: the diagonal SSM runs as one long convolution over a kernel " #
                     "computed from (A, B, C), and no per-step state is ever formed";
  let summary = "S4D-Lin diagonal SSM conv per head: x [B, T, H, M]";
  let description = [{
    Per head h with N complex modes: A = −exp(log_a_real) + i·a_imag,
    Δ = exp(log_dt); bilinear dA = (1+ΔA/2)/(1−ΔA/2), C̃ = C·B·Δ/(1−ΔA/2);
    K[l] = 2·Re Σ_n C̃_n dA_n^l (protocol §3.5 step 4; B is a trainable
    parameter, initialised to 1, as in zoology). The kernel of head h
    convolves each of its M channels: y = K ∗ x. Shapes: log_dt [H],
    log_a_real and a_imag [H, N], b and c [H, N, 2] (real, imaginary).
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$state_name, F32Tensor:$x,
                       F32Tensor:$log_dt, F32Tensor:$log_a_real,
                       F32Tensor:$a_imag, F32Tensor:$b, F32Tensor:$c);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $log_dt `,` $log_a_real `,` $a_imag `,` $b `,` $c attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Sequence mixers
//===----------------------------------------------------------------------===//

def Mix_SoftmaxAttentionOp : Mix_ShapedOp<"softmax_attention", [Mix_MixerAnchor, Mix_GeneratedAnchor]> {
  // 2·B·T²·K (scores) + 2·B·T²·V (mixing) as computed (the causal half is
  // not skipped) + 5·B·T² (softmax).
  let flops = [{
    const double b = s.in[0].size() >= 3 ? s.numel(0) / (s.dim(0, 2) * s.dim(0, 1)) : 1, t = s.dim(0, 2);
    return 2 * b * t * t * s.dim(0, 1) + 2 * b * t * t * s.dim(2, 1) + 5 * b * t * t;
  }];
  let summary = "causal softmax attention, one head: q, k [B, T, K], v [B, T, V]";
  let description = [{ y = softmax(q kᵀ/√K + M) v with M = −10000 above the diagonal (§3.2). }];
  let arguments = (ins StrAttr:$name, F32Tensor:$q, F32Tensor:$k, F32Tensor:$v);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v attr-dict `:` functional-type(operands, results)";
}

def Mix_TaylorMapOp : Mix_ShapedOp<"taylor_map", [Mix_PerRow]> {
  let flops = [{ return 2 * s.outNumel(); }];
  let summary = "Based's 2nd-order Taylor feature map: [.., F] -> [.., 1+F+F²]";
  let description = [{ φ(x) = [1, x/F^{1/4}, vec(x xᵀ)/(√2·√F)], so φ(q)·φ(k) ≈ exp(q·k/√F) (§3.4). }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Mix_LinearAttentionOp : Mix_ShapedOp<"linear_attention", [Mix_MixerAnchor, Mix_GeneratedAnchor]> {
  // Per step and state element 4·F·V + 3·F; the state is S_t = Σ φk vᵀ, then z_t = Σ φk.
  let flops = [{ return s.rows(0) * (4 * s.dim(0, 1) * s.dim(2, 1) + 3 * s.dim(0, 1)); }];
  let stateLayout = "[F, D] then [F]";
  let stateSize = [{ return s.last(0) * s.last(2) + s.last(0); }];
  let summary = "causal normalised linear attention on feature-mapped q, k";
  let description = [{
    y_i = Σ_{j≤i} (φq_i·φk_j) v_j / (Σ_{j≤i} φq_i·φk_j + eps) (§3.4);
    φq, φk [B, T, F], v [B, T, V]. The recurrent state is Σ_j φk_j v_jᵀ.
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$state_name, F32Tensor:$q,
                       F32Tensor:$k, F32Tensor:$v,
                       DefaultValuedAttr<F32Attr, "1e-12">:$eps);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v attr-dict `:` functional-type(operands, results)";
}

def Mix_SelectiveScanOp : Mix_ShapedOp<"selective_scan", [Mix_MixerAnchor, Mix_GeneratedAnchor]> {
  // Per step and state element 7 (decay, update, read-out), + 2·D for the skip.
  let flops = [{ return 7 * s.numel(0) * s.dim(2, 1) + 2 * s.numel(0); }];
  let stateLayout = "[D, N]";
  let stateSize = [{ return s.in.size() > 2 && s.in[2].size() == 2 ? s.in[2][0] * s.in[2][1] : 0; }];
  let summary = "Mamba's selective scan";
  let description = [{
    s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t;  y_t = C_t·s_t + D ⊙ x_t (§3.7).
    x, delta [B, T, D]; a [D, N]; b, c [B, T, N]; d [D].
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$state_name, F32Tensor:$x,
                       F32Tensor:$delta, F32Tensor:$a, F32Tensor:$b,
                       F32Tensor:$c, F32Tensor:$d);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $delta `,` $a `,` $b `,` $c `,` $d attr-dict `:` functional-type(operands, results)";
}

def Mix_DeltaRuleOp : Mix_ShapedOp<"delta_rule", [Mix_MixerAnchor, Mix_GeneratedAnchor]> {
  // 6·K·V per step: S(I − βkkᵀ) + βvkᵀ and the read-out S q.
  let flops = [{ return 6 * s.rows(0) * s.dim(0, 1) * s.dim(2, 1); }];
  let stateLayout = "[V, K]";
  let stateSize = [{ return s.last(2) * s.last(0); }];
  let summary = "DeltaNet's delta-rule recurrence";
  let description = [{
    S_t = S_{t−1}(I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ;  o_t = S_t q_t (§3.8).
    q, k [B, T, K]; v [B, T, V]; beta [B, T, 1].
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$state_name, F32Tensor:$q,
                       F32Tensor:$k, F32Tensor:$v, F32Tensor:$beta);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v `,` $beta attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Interventions (inserted by -mix-apply-rewrites)
//===----------------------------------------------------------------------===//

class Mix_InterventionOp<string mnemonic, string what> : Mix_UnaryOp<mnemonic, what> {
  let flops = Mix_NoFlops;
  let batching = "loop"; // a packed model refuses interventions (they need the batch layout)
  let description = [{
    Runs on a batch laid out in blocks of `n` documents: block 0 is the
    source run, block 1 the base run left alone, block 2 + c the base run of
    intervention cell c. Only cell `cell`'s rows change, at the positions
    given by `role` (a task role such as `key`, `value`, `query`, `divider`,
    `answer`; or `all`; or `pos` with `index`) shifted by `offset`.
    A subspace limits the change to channels [`lo`, `hi`) of the last
    dimension (`NODE[lo:hi]`), or to head `head` of a [B, T, H, ...] value
    (`NODE[head=h]`); −1: the whole vector.
  }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, I64Attr:$cell, StrAttr:$role,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "-1">:$index,
                       DefaultValuedAttr<I64Attr, "-1">:$lo,
                       DefaultValuedAttr<I64Attr, "-1">:$hi,
                       DefaultValuedAttr<I64Attr, "-1">:$head);
}

def Mix_PatchOp : Mix_InterventionOp<"patch",
    "interchange intervention: the base rows take the source run's value"> {
  let summary = "activation patching at named positions, from the source run";
  let description = [{
    With `das` = k > 0 (distributed alignment search, `das(k) NODE at POS`)
    only a learned k-dimensional subspace is interchanged:
      x ← x + Qᵀ Q (a_source − x),  Q [k, W] the first k rows of a learned
    orthogonal R, W the values per position. The runtime holds R (trained
    by `mixc align`); a whole-vector patch is the case k = W.
  }];
  let arguments = (ins StrAttr:$name, F32Tensor:$x, I64Attr:$cell, StrAttr:$role,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "-1">:$index,
                       DefaultValuedAttr<I64Attr, "-1">:$lo,
                       DefaultValuedAttr<I64Attr, "-1">:$hi,
                       DefaultValuedAttr<I64Attr, "-1">:$head,
                       DefaultValuedAttr<I64Attr, "0">:$das);
}

def Mix_AblateOp : Mix_InterventionOp<"ablate", "ablation of a value at named positions"> {
  let summary = "zero, mean (over the source run), noise(sigma) or add(vector)";
  let arguments = (ins StrAttr:$name, F32Tensor:$x, I64Attr:$cell, StrAttr:$role,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "-1">:$index,
                       DefaultValuedAttr<I64Attr, "-1">:$lo,
                       DefaultValuedAttr<I64Attr, "-1">:$hi,
                       DefaultValuedAttr<I64Attr, "-1">:$head,
                       StrAttr:$kind, DefaultValuedAttr<F32Attr, "0.0">:$sigma,
                       OptionalAttr<DenseF32ArrayAttr>:$vector);
}

def Mix_StateEditOp : Mix_Op<"state_edit"> {
  let flops = Mix_NoFlops;
  let summary = "an intervention on a recurrence's state, applied inside the recurrence";
  let description = [{
    Acts on the state S_t of the recurrence named `target` (a
    selective_scan, delta_rule or linear_attention; layouts in
    abi/StateLayout.h), with the batch layout of mix.patch: in cell `cell`'s
    rows, the state after the step at `role` + `offset` (or `index` for
    `pos`) becomes the source run's state there (`patch`), zero, the mean
    of the source run's states there (`mean`), or is shifted by
    noise(`sigma`) or by `vector` (`add`); the recurrence continues from
    it, so outputs from that step on change and earlier ones do not. It has
    no result: the recurrence reads it as an argument and keeps its fused
    region (the kernels take the edit as a mixk_state). On a `mix.scan`,
    `state` names which of its states is edited. `reader` (a built-in
    recurrence only) makes it an edge out of the state: the edit reaches
    only the `next` step (the output at the step reads the unedited state)
    or only the `output` at the step (the unedited state is carried on).

    ```mlir
    mix.state_edit "layers[0].mixer.state@c0" on "layers[0].mixer.scan"
        {cell = 0 : i64, role = "key", kind = "patch"}
    ```
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$target, I64Attr:$cell, StrAttr:$role,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "-1">:$index,
                       StrAttr:$kind, DefaultValuedAttr<F32Attr, "0.0">:$sigma,
                       OptionalAttr<DenseF32ArrayAttr>:$vector,
                       OptionalAttr<StrAttr>:$state,
                       OptionalAttr<StrAttr>:$reader);
  let assemblyFormat = "$name `on` $target attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion (formed by -mix-fuse, after interventions)
//===----------------------------------------------------------------------===//

def Mix_FusedOp : Mix_Op<"fused", [IsolatedFromAbove, SingleBlock]> {
  let flops = Mix_NoFlops;
  let summary = "a fused region: one kernel's worth of ops";
  let description = [{
    Groups an elementwise chain, or one mixer primitive with its elementwise
    prologue and epilogue (`kind` = `elementwise` or the anchor's op name),
    into one region that a kernel back end compiles as a unit. The body's
    arguments are `inputs`; `mix.yield` returns the values used outside.
    Inner ops keep their names, so the graph stays addressable by name.

    ```mlir
    %f = mix.fused "layers[0].mixer.conv" kind "causal_conv" (%x, %w, %b)
        : (tensor<?x?x64xf32>, tensor<64x4xf32>, tensor<64xf32>) -> tensor<?x?x64xf32> {
    ^bb0(%a: tensor<?x?x64xf32>, %k: tensor<64x4xf32>, %c: tensor<64xf32>):
      %0 = mix.causal_conv %a, %k, %c {name = "layers[0].mixer.conv"} : ...
      %1 = mix.silu %0 {name = "layers[0].mixer.act"} : ...
      mix.yield %1 : tensor<?x?x64xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$kind, Variadic<AnyTensor>:$inputs);
  let results = (outs Variadic<AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `kind` $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// User-defined recurrences (the DSL's `scan` construct)
//===----------------------------------------------------------------------===//

def Mix_ScanOp : Mix_Op<"scan", [IsolatedFromAbove, SingleBlock, Pure, HasShapeRule,
                                 ShapeInferenceOpInterface]> {
  // Its step's ops, T times: abi/Flops.cpp counts them over the body.
  let flops = Mix_NoFlops;
  let holdsStates = 1;
  let summary = "a recurrence written in the DSL: its body runs once a time step";
  let description = [{
    The body is one step. Its arguments are the `num_states` states (a row
    per batch element, [B, ...], zero before the first step), then one per
    input: for a `sliced` input [B, T, ...] its step t, [B, ...]; for the
    others the whole value (loop-invariant, e.g. a parameter). `mix.yield`
    returns the next states, then the values the step emits, [B, ...]; the
    op's results are those emitted values over time, [B, T, ...].
    `state_names` name the states as intervention points.

    ```mlir
    %y = mix.scan "layers[0].mixer.scan" (%k, %v, %q) {num_states = 1 : i64,
        sliced = array<i64: 1, 1, 1>, state_names = ["layers[0].mixer.S"]}
        : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    ^bb0(%S: tensor<?x8x8xf32>, %kt: tensor<?x8xf32>, %vt: tensor<?x8xf32>, %qt: tensor<?x8xf32>):
      ...   // S' = S + k vᵀ;  y = Sᵀ q
      mix.yield %S1, %y : tensor<?x8x8xf32>, tensor<?x8xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$num_states, DenseI64ArrayAttr:$sliced,
                       StrArrayAttr:$state_names, Variadic<AnyTensor>:$inputs);
  let results = (outs Variadic<AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Result types from ranked operand types; emits an error and fails when
    /// the operands break this op's shape rules.
    ::mlir::LogicalResult shapeRule(
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes);
  }];
}

def Mix_YieldOp : Mix_Op<"yield", [Pure, Terminator, ParentOneOf<["FusedOp", "ScanOp"]>]> {
  let flops = Mix_NoFlops;
  let summary = "the values a fused region, or a scan's step, returns";
  let arguments = (ins Variadic<AnyTensor>:$values);
  // Hand-written: the declarative `type($values)` instantiates LLVM 16's
  // inline parseTypeList lambda in this library, and that copy crashed
  // func.return's parsing in mix-opt (an ODR clash with libMLIR's copy).
  let hasCustomAssemblyFormat = 1;
}

//===----------------------------------------------------------------------===//
// Calls (before inlining)
//===----------------------------------------------------------------------===//

def Mix_CallOp : Mix_Op<"call", [CallOpInterface]> {
  let flops = Mix_NoFlops;
  let summary = "call of a mixer or block instance, inlined by -mix-inline";
  let description = [{
    `scope` is the name prefix the callee's nodes get when inlined: a mixer
    call's scope is `mixer`, a block call's is its caller's own prefix (empty
    at the top level), so that block nodes land in the loop scope `layers[i]`.

    ```mlir
    %y = mix.call @mlp_d64(%x) {scope = "layers[0].mlp"} : (tensor<*xf32>) -> tensor<*xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, StrAttr:$scope,
                       Variadic<AnyTensor>:$inputs);
  let results = (outs Variadic<AnyTensor>:$results);
  let assemblyFormat = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)";
  let extraClassDeclaration = [{
    ::mlir::CallInterfaceCallable getCallableForCallee() {
      return (*this)->getAttrOfType<::mlir::SymbolRefAttr>("callee");
    }
    ::mlir::Operation::operand_range getArgOperands() { return getInputs(); }
  }];
}

#endif // MIX_OPS

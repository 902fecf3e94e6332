//===- Passes.td - mix dialect passes ----------------------*- tablegen -*-===//
#ifndef MIX_PASSES
#define MIX_PASSES

include "mlir/Pass/PassBase.td"

def MixInline : Pass<"mix-inline", "mlir::ModuleOp"> {
  let summary = "Inline mixer and block calls into the model, prefixing node names";
  let description = [{
    Replaces every `mix.call` by the callee's body. Each inlined op's `name`
    (and a nested call's `scope`, a recurrent op's `state_name`) gets the
    call's `scope` as prefix, which is how hierarchical names such as
    `layers[1].mixer.conv` arise. Callees left without uses are erased.

    Before:
    ```mlir
    func.func private @gate_d4(%x: tensor<*xf32>) -> tensor<*xf32> {
      %0 = mix.silu %x {name = "act"} : (tensor<*xf32>) -> tensor<*xf32>
      return %0 : tensor<*xf32>
    }
    %1 = mix.call @gate_d4(%x) {scope = "layers[0].mixer"} : (tensor<*xf32>) -> tensor<*xf32>
    ```
    After:
    ```mlir
    %1 = mix.silu %x {name = "layers[0].mixer.act"} : (tensor<*xf32>) -> tensor<*xf32>
    ```
  }];
  let constructor = "mix::createInlinePass()";
}

def MixShapeInference : Pass<"mix-shape-inference", "mlir::func::FuncOp"> {
  let summary = "Infer ranked result types from the model's inputs and parameters";
  let description = [{
    Walks ops in dependence order and asks each to apply its shape rule.
    B and T stay dynamic; every other dimension becomes static.

    Before:
    ```mlir
    %y = mix.linear %x, %w {name = "fc1"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<*xf32>
    ```
    After:
    ```mlir
    %y = mix.linear %x, %w {name = "fc1"} : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
    ```
    Fails with an error at the first op whose operands break its rule.
  }];
  let constructor = "mix::createShapeInferencePass()";
  let dependentDialects = ["mix::MixDialect"];
}

def MixCheckNames : Pass<"mix-check-names", "mlir::func::FuncOp"> {
  let summary = "Check that node names are unique and non-empty within a function";
  let description = [{
    Node names are the interface of interventions: two nodes with one name
    would make a rewrite script ambiguous. Reports the second definition.
  }];
  let constructor = "mix::createCheckNamesPass()";
}

def MixApplyRewrites : Pass<"mix-apply-rewrites", "mlir::func::FuncOp"> {
  let summary = "Apply an intervention script at named nodes";
  let description = [{
    Runs before fusion, on the inlined model. `remove NODE` replaces the
    node's uses by its input; each intervention cell inserts a `mix.patch`
    or `mix.ablate` right after the nodes its pattern names, so only those
    values change (and only the intervened region loses its fused form).

    Script `patch layers[0].block_output at value`:
    ```mlir
    %5 = mix.add %3, %4 {name = "layers[0].block_output"} : ...
    %6 = mix.silu %5 {name = "layers[1].act"} : ...
    ```
    becomes
    ```mlir
    %5 = mix.add %3, %4 {name = "layers[0].block_output"} : ...
    %p = mix.patch %5 {cell = 0, name = "layers[0].block_output@c0", role = "value"} : ...
    %6 = mix.silu %p {name = "layers[1].act"} : ...
    ```
    A pattern that names no node is an error listing the closest names.
  }];
  let options = [
    Option<"scriptPath", "script", "std::string", /*default=*/"\"\"",
           "path of the .rw intervention script">
  ];
  let constructor = "mix::createApplyRewritesPass()";
}

def MixScanLinearity : Pass<"mix-scan-linearity", "mlir::func::FuncOp"> {
  let summary = "Decide whether each scan's step is linear in its states (the chunked form's precondition)";
  let description = [{
    Reads each `mix.scan`'s step as S_t = L_t(S_{t-1}) + W_t (mix/ScanLinearity.h):
    L_t a decay (scalar, per row, per column, row times column, per element)
    possibly times a rank-1 correction (I - b k k^T); W_t a sum of outer
    products; each emitted value linear or affine in S_t, or a non-linear
    function of values that contract S_t (a readout). Writes the verdict
    onto the scan; with `remarks`, a scan that keeps its sequential form gets
    a remark at the op that breaks linearity. Runs after the interventions:
    an edit inside a step (a `mix.patch` on a step value) is an op the
    analysis does not read through, so that scan stays sequential.

    Before (GLA's step):
    ```mlir
    %y = mix.scan "scan"(%a, %k, %v, %q) {num_states = 1 : i64, ...} {
      ... S = column(alpha) * S + outer(k, v); o = vecmat(q, S)
    }
    ```
    After:
    ```mlir
    %y = mix.scan "scan"(%a, %k, %v, %q) {linearity = "chunkable",
        linearity_emits = "scan.o: linear",
        linearity_states = "S: decay.row, write outer", num_states = 1 : i64, ...}
    ```
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "emit a remark naming why a scan stays sequential">
  ];
  let constructor = "mix::createScanLinearityPass()";
}

def MixFuse : Pass<"mix-fuse", "mlir::func::FuncOp"> {
  let summary = "Group elementwise chains and mixer prologues/epilogues into fused regions";
  let description = [{
    Runs after interventions. Per-position ops (elementwise arithmetic and
    activations, the Taylor feature map, norms) join their neighbours; a
    mixer primitive (causal conv, long conv, attention, linear attention,
    selective scan, delta rule) anchors a region with its elementwise
    prologue and epilogue, at most one primitive per region. A value that
    an intervention reads (`mix.patch`, `mix.ablate`) stays outside, so only
    the intervened region loses its fused form. Each region is a
    `mix.fused` op whose body holds the original, still-named ops. A
    `mix.scan` is a region of its own, kind "scan" (its step is compiled
    whole: CodeGen/ScanPlan.h).

    Before:
    ```mlir
    %c = mix.causal_conv %x, %w, %b {name = "layers[0].mixer.conv"} : ...
    %a = mix.silu %c {name = "layers[0].mixer.act"} : ...
    ```
    After:
    ```mlir
    %a = mix.fused "layers[0].mixer.conv" kind "causal_conv" (%x, %w, %b) : ... {
    ^bb0(%x1: ..., %w1: ..., %b1: ...):
      %c = mix.causal_conv %x1, %w1, %b1 {name = "layers[0].mixer.conv"} : ...
      %a = mix.silu %c {name = "layers[0].mixer.act"} : ...
      mix.yield %a : ...
    }
    ```
  }];
  let constructor = "mix::createFusePass()";
  let dependentDialects = ["mix::MixDialect"];
}

def MixToCpp : Pass<"mix-to-cpp", "mlir::ModuleOp"> {
  let summary = "Print the CPU kernels (C++) of the module's fused regions to stdout";
  let description = [{
    Runs the CPU kernel back end (compiler/lib/CodeGen) on the module's
    `mix.fused` regions (all functions, in order, numbered across them), as `mixc compile --emit=cpp` does on a whole model,
    and writes the translation unit to stdout; the IR is left unchanged.
    Lit tests feed it hand-written regions to pin the plan (each input's
    role, the phases) and the reasons a region is left to the interpreter.

    Before:
    ```mlir
    %f = mix.fused "conv" kind "long_conv"(%x, %h) ({
    ^bb0(%a: tensor<?x?x4xf32>, %k: tensor<?x4xf32>):
      %y = mix.long_conv %a, %k {name = "conv"} : ...
      mix.yield %y : tensor<?x?x4xf32>
    }) : ...
    ```
    After (stdout):
    ```c++
    // region "conv" (kind long_conv), rows = a->dims[0] * a->dims[1], inputs: row, filter
    extern "C" void mixk_0_forward(const mixk_args *a) { ... mixk::longConvForward(...); }
    ```
  }];
  let constructor = "mix::createMixToCppPass()";
}

def MixToCu : Pass<"mix-to-cu", "mlir::ModuleOp"> {
  let summary = "Print the CUDA kernels of the module's fused regions to stdout";
  let description = [{
    As `-mix-to-cpp`, for the CUDA back end (`mixc compile --emit=cu`): the
    same plan, printed as device kernels and host entry points.
  }];
  let constructor = "mix::createMixToCuPass()";
}

#endif // MIX_PASSES

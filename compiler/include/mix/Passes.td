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

#endif // MIX_PASSES

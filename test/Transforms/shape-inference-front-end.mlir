// The DSL front end's result types (attached at import) are checked against
// each op's shape rule: agreement drops the attribute; a disagreement is a
// compiler bug, reported at the op instead of compiled into a wrong model.
// (Both runs see both cases, so both exit non-zero.)
// RUN: not %mix-opt %s --split-input-file --mix-shape-inference 2>&1 | FileCheck %s --check-prefix=AGREE
// RUN: not %mix-opt %s --split-input-file --mix-shape-inference 2>&1 | FileCheck %s --check-prefix=DISAGREE

// AGREE-LABEL: func.func @agree
// AGREE: mix.linear {{.*}} {name = "fc"} : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<?x?x6xf32>
// AGREE-NOT: front_end_types
func.func @agree(%x: tensor<?x?x4xf32>, %w: tensor<6x4xf32>) -> tensor<*xf32> {
  %y = mix.linear %x, %w {name = "fc", mix.front_end_types = [tensor<?x?x6xf32>]} : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @disagree(%x: tensor<?x?x4xf32>, %w: tensor<6x4xf32>) -> tensor<*xf32> {
  // DISAGREE: :5:8: error: 'mix.linear' op result #0: the DSL front end computed 'tensor<?x?x8xf32>' but the op's shape rule gives 'tensor<?x?x6xf32>'
  %y = mix.linear %x, %w {name = "fc", mix.front_end_types = [tensor<?x?x8xf32>]} : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

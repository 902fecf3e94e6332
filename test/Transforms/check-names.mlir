// Two nodes with one name would make interventions ambiguous.
// RUN: %mix-opt %s --mix-check-names -verify-diagnostics -split-input-file

func.func @duplicate(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-note @+1 {{first used here}}
  %a = mix.silu %x {name = "layers[0].act"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  // expected-error @+1 {{reuses node name 'layers[0].act'}}
  %b = mix.relu %a {name = "layers[0].act"} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %b : tensor<?x?x4xf32>
}

// -----

func.func @empty(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{has no node name}}
  %a = mix.silu %x {name = ""} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %a : tensor<?x?x4xf32>
}

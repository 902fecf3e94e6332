//===- MixDialect.td - the mix dialect ---------------------*- tablegen -*-===//
//
// The `mix` dialect: one op per sequence-mixing primitive of the mixer DSL.
// Tensors are laid out [B, T, ...]: batch, time, then feature dimensions.
// B and T stay dynamic (`?`) until run time; every feature dimension is static
// once a config has resolved the model's integer parameters.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_DIALECT
#define MIX_DIALECT

include "mlir/IR/OpBase.td"

def Mix_Dialect : Dialect {
  let name = "mix";
  let summary = "Sequence-mixing primitives for recall architectures";
  let description = [{
    Ops of this dialect carry a `name` attribute: the node's stable
    hierarchical name (`layers[1].mixer.conv`). Names are the public interface
    for interventions, so passes keep them: a pattern that would erase a
    user-named value does not fire.
  }];
  let cppNamespace = "::mix";
}

class Mix_Op<string mnemonic, list<Trait> traits = []> :
    Op<Mix_Dialect, mnemonic, traits>;

#endif // MIX_DIALECT

//===- NodeAttrs.h - reading a graph node's attributes ----------*- C++ -*-===//
//
// The runtime's readers of graph::Node attributes (the interpreter's op
// table and the intervention steps). Required ones use at(): Model::create
// has checked that every attribute the op table lists is present.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_NODEATTRS_H
#define MIXC_RUNTIME_CORE_NODEATTRS_H

#include "abi/Actions.h"
#include "abi/Graph.h"
#include "abi/KernelAbi.h"
#include "abi/OpRegistry.h"

#include <cstdint>
#include <vector>

namespace mixc::rt {

/// A float attribute (an integer one reads as its value), or `dflt`.
inline double attrF(const graph::Node &n, const char *key, double dflt) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end())
    return dflt;
  return it->second.kind == graph::AttrValue::Kind::Int ? static_cast<double>(it->second.i) : it->second.f;
}
/// A float attribute the op's ODS definition requires or gives a default
/// (abi/OpRegistry.h): absent, it reads as that default.
inline double attrF(const graph::Node &n, const char *key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end())
    return ops::defaultNumber(n.op, key);
  return it->second.kind == graph::AttrValue::Kind::Int ? static_cast<double>(it->second.i) : it->second.f;
}
inline int64_t attrI(const graph::Node &n, const char *key) { return n.attrs.at(key).i; }
inline int64_t attrI(const graph::Node &n, const char *key, int64_t dflt) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? dflt : it->second.i;
}
inline bool attrB(const graph::Node &n, const char *key, bool dflt) {
  auto it = n.attrs.find(key);
  return it == n.attrs.end() ? dflt : it->second.b;
}
/// What an intervention node (patch, ablate, state_edit) does: a patch is
/// an interchange, the others carry it in `kind` (checked by Model::create).
inline Action nodeAction(const graph::Node &n) {
  if (n.op == "patch")
    return Action::Patch;
  return actionNamed(n.attrs.at("kind").s).value_or(Action::Remove);
}
inline const std::vector<int64_t> &attrInts(const graph::Node &n, const char *key) { return n.attrs.at(key).ints; }
/// Which reader of its state a state_edit reaches (its `reader`: an edge
/// out of the state), as abi/KernelAbi.h's MIXK_EDIT_*.
inline int stateEditReader(const graph::Node &n) {
  auto it = n.attrs.find("reader");
  const std::optional<StateReader> r = it == n.attrs.end() ? std::nullopt : stateReaderNamed(it->second.s);
  return !r ? MIXK_EDIT_BOTH : *r == StateReader::NextStep ? MIXK_EDIT_NEXT_STEP : MIXK_EDIT_OUTPUT;
}

} // namespace mixc::rt

#endif

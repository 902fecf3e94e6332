//===- Actions.h - the intervention actions of rewrite scripts --*- C++ -*-===//
//
// One enum for what a `.rw` statement does, read by the script parser
// (dsl/Rewrite), the rewrite pass (which writes the name into `mix.ablate`'s
// and `mix.state_edit`'s `kind` attribute), the dialect's verifiers and the
// runtime (which reads it back): a new action is a line here and its cases.
// Header only and plain C++, so that the DSL can use it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_ACTIONS_H
#define MIXC_ABI_ACTIONS_H

#include <optional>
#include <string>
#include <string_view>

namespace mixc {

enum class Action {
  Patch,  // interchange: the base rows take the source run's value
  Das,    // interchange within a learned k-dimensional subspace (mixc align)
  Zero,   // ablation to zero
  Mean,   // ablation to the source run's mean at the position
  Noise,  // shift by Gaussian noise of a given σ
  Add,    // shift by a given vector (steering)
  Remove, // `remove NODE`: the graph edit, not a per-cell intervention
};

/// The action's name as scripts and graph attributes spell it.
inline const char *actionName(Action a) {
  switch (a) {
  case Action::Patch: return "patch";
  case Action::Das: return "das";
  case Action::Zero: return "zero";
  case Action::Mean: return "mean";
  case Action::Noise: return "noise";
  case Action::Add: return "add";
  case Action::Remove: return "remove";
  }
  return "?";
}

/// The action a name spells, if any.
inline std::optional<Action> actionNamed(std::string_view name) {
  for (Action a : {Action::Patch, Action::Das, Action::Zero, Action::Mean, Action::Noise, Action::Add, Action::Remove})
    if (name == actionName(a))
      return a;
  return std::nullopt;
}

/// Every action, as the parser's error lists them.
inline const char *kActionList = "patch, zero, mean, noise(σ), add(FILE), das(k) or remove";

/// Interchanges: the value comes from the source run's block.
inline bool isInterchange(Action a) { return a == Action::Patch || a == Action::Das; }
/// Whether the action reads the source run (an interchange, or its mean).
inline bool readsSource(Action a) { return isInterchange(a) || a == Action::Mean; }
/// The kinds `mix.ablate` takes (its `kind` attribute); a state edit takes these and patch.
inline bool isAblation(Action a) {
  return a == Action::Zero || a == Action::Mean || a == Action::Noise || a == Action::Add;
}


/// The readers of a built-in recurrence's state that an edge out of it
/// names (`patch STATE -> next at P`, `-> output at P`): the next step, or
/// the output at the edited step. The rewrite pass writes the name into
/// `mix.state_edit`'s `reader`; the runtime reads it back as MIXK_EDIT_*.
enum class StateReader { Both, NextStep, Output };
inline const char *stateReaderName(StateReader r) {
  return r == StateReader::NextStep ? "next" : r == StateReader::Output ? "output" : "";
}
inline std::optional<StateReader> stateReaderNamed(std::string_view name) {
  for (StateReader r : {StateReader::NextStep, StateReader::Output})
    if (name == stateReaderName(r))
      return r;
  return std::nullopt;
}
} // namespace mixc

#endif

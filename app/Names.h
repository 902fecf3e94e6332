//===- Names.h - a compiled model's intervention points ----------*- C++ -*-===//
//
// What `mixc names` prints and the Python module's `names()` returns: every
// input, parameter, node and recurrent state of a runtime graph, with what a
// rewrite script may do to it (the rewrite pass's own rules: dsl::nodeActions
// for nodes, abi/StateLayout.h for states). It reads only the runtime graph,
// so the runtime-only build has it too.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_APP_NAMES_H
#define MIXC_APP_NAMES_H

#include "abi/Graph.h"

#include <string>
#include <vector>

namespace mixc::app {

struct NamedPoint {
  std::string kind;                 // input, param, buffer, node, state
  std::string name;
  std::string op;                   // node: its op; state: its recurrence's op
  std::vector<std::string> actions; // node: intervene, remove; state: intervene
  std::string note;                 // state: "[D, N] = 512 floats", or why it has no actions
};

/// In graph order: inputs, parameters and buffers, then each node followed
/// by its recurrent state, if any.
std::vector<NamedPoint> namedPoints(const graph::Graph &g);

/// The listing `mixc names` prints, one point a line.
std::string formatNamedPoints(const std::vector<NamedPoint> &points);

/// The edges a script can name (`patch SENDER -> RECEIVER at P`), in graph
/// order: from each node `namedPoints` marks `intervene` to each node that
/// reads it; inside a scan's step, from each step value to each node of the
/// step that reads it and to the state it is handed on as; and from each
/// built-in recurrence's editable state to its two readers, `next` (its next
/// step) and `output` (the output at the step). `mixc names --edges` prints them.
std::vector<std::pair<std::string, std::string>> edges(const graph::Graph &g);
std::string formatEdges(const std::vector<std::pair<std::string, std::string>> &edges);

/// The nodes and recurrent states each hook pattern names (a name, or a
/// pattern such as `layers[*].block_input`), in graph order: nodes
/// `namedPoints` marks `intervene`, states it marks `intervene`. False with
/// `error` for a pattern that matches none (with the nearest name) or a
/// state that cannot be edited. Values inside a scan's step are included.
bool hookTargets(const graph::Graph &g, const std::vector<std::string> &patterns,
                 std::vector<std::vector<std::string>> &nodesPerPattern, std::string &error);

} // namespace mixc::app

#endif

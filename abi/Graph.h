//===- Graph.h - the runtime graph ------------------------------*- C++ -*-===//
//
// The one structure that crosses from the compiler (MLIR, no exceptions) to
// the runtime (LibTorch): a flat, versioned list of named nodes. Plain C++,
// no LLVM or torch types. Written as human-readable JSON (`--emit=graph`).
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_ABI_GRAPH_H
#define MIXC_ABI_GRAPH_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mixc::graph {

/// Bumped whenever the file layout changes incompatibly.
constexpr int kFormatVersion = 2; // 2: regions record input roles and a kernel per target
constexpr const char *kFormatName = "mixc-graph";
constexpr int64_t kDynamic = -1; // B, T: known at run time

struct AttrValue {
  enum class Kind { Int, Float, Bool, Str, Ints, Floats };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool operator==(const AttrValue &o) const {
    return kind == o.kind && i == o.i && f == o.f && b == o.b && s == o.s && ints == o.ints &&
           floats == o.floats;
  }
};

struct Input {
  std::string name;
  std::vector<int64_t> shape; // kDynamic for B and T
  std::string dtype;          // "i64" or "f32"
};

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  std::string init;      // e.g. "normal(0.02)"
  bool trainable = true; // false: a frozen buffer
};

/// The op of a state intervention (MixOps.td's mix.state_edit): a node with
/// no inputs or results whose attribute `target` names the recurrence whose
/// state it edits (abi/StateLayout.h).
constexpr const char *kStateEditOp = "state_edit";

/// The attribute the fusion pass (compiler/lib/Transforms/Fuse.cpp) gives a
/// primitive that has kernels of its own but is in no fused region, with
/// why: it runs on LibTorch under every back end, which `mixc train` says.
constexpr const char *kUnfusedAttr = "unfused";

/// A value is named by its node ("layers[0].mixer.conv") or, for a node
/// with several results, "name#i"; inputs and parameters by their names.
struct Node {
  std::string name;
  std::string op; // the mix op without the dialect prefix: "linear"
  std::vector<std::string> inputs;
  std::map<std::string, AttrValue> attrs;
  std::vector<std::vector<int64_t>> shapes; // one per result
  std::string loc;                          // "file:line:col" of the DSL source
  /// A scan's step (op "scan", MixOps.td's mix.scan): its arguments (the
  /// states, named as intervention points; then one per input, "<input>[t]"
  /// when sliced over time), its nodes, which see only those arguments and
  /// each other, and its results (the next states, then what it emits).
  std::vector<Input> bodyArgs;
  std::vector<Node> body;
  std::vector<std::string> bodyResults;
};

/// A fused region (compiler/lib/Transforms/Fuse.cpp); its nodes carry the
/// attribute `fused` = name. Per target ("cpu", "cuda"): `kernel` is the
/// symbol prefix of its generated kernel (abi/KernelAbi.h),
/// empty when that back end left the region to the interpreter (`skipped`
/// says why).
constexpr const char *kTargetCpu = "cpu";
constexpr const char *kTargetCuda = "cuda";

struct RegionTarget {
  std::string kernel;
  std::string skipped;
};

/// How a kernel indexes a region input (compiler/include/mix/KernelEmitter.h).
constexpr const char *kRoleRow = "row";             // leads with the rowRank run-time dims
constexpr const char *kRoleFilter = "filter";       // a long conv's [L, C] filter, L >= T
constexpr const char *kRoleInvariant = "invariant"; // no run-time dims

struct Region {
  std::string name;
  std::string kind; // "elementwise" or the anchor primitive
  std::vector<std::string> inputs, outputs; // value names, in kernel order
  std::vector<std::string> inputRoles;      // one per input; empty when no back end planned it
  int rowRank = 0;  // leading run-time dims the kernel iterates over
  std::map<std::string, RegionTarget> targets; // by target name

  /// The target's entry, or an empty one (no kernel) when it has none.
  RegionTarget target(const std::string &name) const {
    auto it = targets.find(name);
    return it == targets.end() ? RegionTarget{} : it->second;
  }
};

struct Graph {
  int version = kFormatVersion;
  std::string model;
  std::string source;
  std::vector<std::pair<std::string, std::string>> config; // resolved model parameters
  std::vector<Input> inputs;
  std::vector<Param> params;
  std::vector<Node> nodes;
  std::vector<std::string> outputs;
  std::vector<Region> regions; // optional: absent in graphs from before fusion
};

/// Pretty-printed JSON.
std::string toJson(const Graph &g);

/// The digest that names a graph: of its JSON form, so a graph read back
/// from a file has the digest of the one written. Bundles name the graph a
/// rewrite was compiled against with it; generated kernels, the graph they
/// were generated for (KernelAbi.h).
std::string graphDigest(const Graph &g);

/// The model a graph file describes, without what the compiler derived
/// from it (the fused regions, their kernels, each node's `fused` tag), the
/// source locations and path, or the file version: two graphs of one model
/// compiled by different mixc versions compare equal, so `--resume` accepts
/// a checkpoint written before an upgrade. Text that is not JSON is
/// returned as it is.
std::string modelIdentity(const std::string &graphJson);

/// Parses and validates (version, unique names, inputs defined before use);
/// on failure returns false with a message naming what is wrong.
bool fromJson(const std::string &text, Graph &g, std::string &error);

/// Every value's shape by name: inputs, parameters, node results (result
/// i > 0 of node n as "n#i"); run-time dims are kDynamic.
std::map<std::string, std::vector<int64_t>> valueShapes(const Graph &g);

/// Number of trainable scalars (frozen buffers excluded).
int64_t parameterCount(const Graph &g);

/// Floats in the parameters, as a double (a size estimate never wraps):
/// the trainable ones only, or (`trainableOnly` false) every one.
double parameterFloats(const Graph &g, bool trainableOnly);

/// Checks that every input of every node is defined earlier and names are
/// unique; returns "" when the graph is well formed.
std::string validate(const Graph &g);

} // namespace mixc::graph

#endif

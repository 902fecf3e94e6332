//===- Rewrite.h - intervention scripts (.rw) -------------------*- C++ -*-===//
//
// One statement a line; `#` starts a comment.
//
//   corrupt key | value | none     how the base run differs from the clean one
//   direction restore | swap       restore: base = corrupted, source = clean (default)
//   patch  NODE at POS             take NODE's value from the source run at POS
//   zero | mean | noise(σ) NODE at POS    ablations (mean: over the source run)
//   add(FILE) NODE at POS          add a vector (whitespace-separated numbers in FILE)
//   das(k) NODE at POS             distributed alignment search: interchange a
//                                  learned k-dimensional rotated subspace of
//                                  NODE with the source run's (`mixc align`)
//   remove NODE                    replace NODE by its input (identity), everywhere
//   sweep v in 0..2, p in {key, value}: ACTION NODE at POS    one cell per combination
//
// NODE is a hierarchical node name with `*` wildcards inside a segment
// (`layers[*].mixer.conv`) and `$v` sweep variables, optionally followed by
// a subspace: `[a:b]` (channels a ≤ c < b of the last dimension) or
// `[head=h]` (head h of a [B, T, H, ...] value); POS is a task role
// (key, value, query, divider, answer) with an optional offset (`key+1`),
// `pos(N)`, or `all`. Each top-level action, and each sweep combination, is
// one cell of the experiment.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_DSL_REWRITE_H
#define MIXC_DSL_REWRITE_H

#include "abi/Actions.h"
#include "dsl/Diagnostics.h"

#include <ostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mixc::dsl {

struct RwPosition {
  std::string role;   // key value query divider answer all pos
  int64_t offset = 0; // key+1
  int64_t index = -1; // pos(N)
  std::string str() const;
};

struct RwAction {
  Action kind = Action::Patch;
  std::string pattern; // node name pattern, sweep variables substituted
  RwPosition position;
  double sigma = 0;
  std::vector<double> vector; // add(FILE)
  /// A subspace: channels [lo, hi) of the last dimension (NODE[lo:hi]), or
  /// head `head` of a [B, T, H, ...] value (NODE[head=h]); −1: all of it.
  int64_t lo = -1, hi = -1, head = -1;
  /// das(k): the learned subspace's dimension (0: not a DAS action).
  int64_t dasK = 0;
  SourceLoc loc;        // of the pattern
  /// `ACTION SENDER -> RECEIVER at P`, an edge: only the readers of the
  /// sender whose names match `receiver` (a name or pattern) see the edited
  /// value; every other reader sees the run's own. Empty: the whole node.
  std::string receiver;
  SourceLoc receiverLoc;
  /// `ACTION SENDER via N1 -> N2 -> ... at P`, path patching: the edited
  /// value reaches the rest of the model only along the chain of readers
  /// N1 (reads SENDER), N2 (reads N1), ...; every other reader of SENDER or
  /// of a node on the path sees the run's own value, and the readers of the
  /// path's last node see its path-patched value (protocol §6.3). Each Ni
  /// names one node. Empty: no path.
  std::vector<std::string> via;
  std::vector<SourceLoc> viaLocs;
};

struct RwCell {
  /// "layer=1 position=value" (a sweep's cell), or the statement's text; a
  /// sweep cell whose variables another cell shares is labelled with its
  /// statement too ("layer=1: patch layers[1].block_input[0:16] at key"),
  /// and a statement written twice its line ("... (line 3)"), so every label
  /// names one cell.
  std::string label;
  std::string statement; // the action as written, sweep variables filled in
  SourceLoc at;          // the line it comes from
  std::vector<std::pair<std::string, std::string>> coords;
  std::vector<RwAction> actions;
};

struct RwScript {
  std::string corrupt = "key";
  bool swap = false;
  std::string readout = "p"; // p | logit_diff | kl: what Attrib is a ratio of (protocol §6)
  std::vector<RwCell> cells;
  std::vector<RwAction> removes;
  /// Where corrupt, direction and readout were set: each once per script.
  std::map<std::string, SourceLoc> settingAt;
};

/// Parses a script into `sm`-registered text; on error prints
/// `file:line:col: error: ...` with a caret to `err` and returns false.
bool parseRewrite(const std::string &text, const std::string &path, SourceManager &sm,
                  RwScript &script, std::ostream &err);
bool loadRewrite(const std::string &path, SourceManager &sm, RwScript &script, std::ostream &err);
/// The largest script loadRewrite reads.
constexpr size_t kMaxRewriteBytes = 16u << 20;

/// Glob match of a node name against a pattern: `*` matches any run of
/// characters other than `.`.
bool matchesPattern(const std::string &pattern, const std::string &name);

/// `pattern` against a recurrent state's name: as matchesPattern, and, for a
/// state of a DSL scan (`ofScan`), also through the alias PREFIX.state,
/// which names every state of the scans under PREFIX. So one pattern,
/// `layers[*].mixer.state`, reaches Mamba's built-in state and Gated
/// DeltaNet's scan state S alike (the hybrids in stdlib/).
bool matchesStatePattern(const std::string &pattern, const std::string &state, bool ofScan);

/// What a script can do to a node, from its shapes (a negative dim is known
/// only at run time: B, T). The rewrite pass enforces it and `mixc names`
/// prints it, so the two never disagree.
///   intervene  patch, zero, mean, noise, add: the node's one result is a
///              [B, T, ...] value, so positions exist
///   remove     the node has an input of its result's shape to stand in for it
struct NodeActions {
  bool intervene = false, remove = false;
};
NodeActions nodeActions(const std::vector<std::vector<int64_t>> &results, const std::vector<int64_t> *firstInput);

} // namespace mixc::dsl

#endif

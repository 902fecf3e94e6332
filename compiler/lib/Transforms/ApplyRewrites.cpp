//===- ApplyRewrites.cpp - intervention scripts as a pass -------------------===//
#include "mix/MixOps.h"
#include "mix/Passes.h"

#include "abi/StateLayout.h"
#include "support/Suggest.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <sstream>
#include <tuple>

namespace mix {
#define GEN_PASS_DEF_MIXAPPLYREWRITES
#include "mix/Passes.h.inc"
} // namespace mix

using namespace mlir;
using namespace mix;
namespace dsl = mixc::dsl;

namespace {
/// What a script may do to `op` (dsl::nodeActions, shared with `mixc
/// names`), from its ranked shapes; MLIR's dynamic size is negative, as the
/// rule expects. An unranked value has no shape and allows nothing.
mixc::dsl::NodeActions actionsOf(Operation *op) {
  std::vector<std::vector<int64_t>> results;
  for (Value r : op->getResults()) {
    auto t = r.getType().dyn_cast<RankedTensorType>();
    if (!t)
      return {};
    results.emplace_back(t.getShape().begin(), t.getShape().end());
  }
  std::vector<int64_t> first;
  auto in = op->getNumOperands() > 0 ? op->getOperand(0).getType().dyn_cast<RankedTensorType>() : nullptr;
  if (in)
    first.assign(in.getShape().begin(), in.getShape().end());
  return mixc::dsl::nodeActions(results, in ? &first : nullptr);
}

struct ApplyRewritesPass : mix::impl::MixApplyRewritesBase<ApplyRewritesPass> {
  ApplyRewritesPass() = default;
  ApplyRewritesPass(const dsl::RwScript &s, const std::vector<std::string> &paths)
      : script(s), paths(paths), preparsed(true) {}

  /// Dissolves every mix.fused region back into the function body.
  static void unfuse(func::FuncOp fn) {
    SmallVector<FusedOp> regions;
    fn.walk([&](FusedOp f) { regions.push_back(f); });
    for (FusedOp f : regions) {
      Block &body = f.getBody().front();
      for (auto [arg, in] : llvm::zip(body.getArguments(), f.getInputs()))
        arg.replaceAllUsesWith(in);
      auto yield = cast<YieldOp>(body.getTerminator());
      f.replaceAllUsesWith(yield.getValues());
      yield.erase();
      f->getBlock()->getOperations().splice(f->getIterator(), body.getOperations());
      f.erase();
    }
  }

  void runOnOperation() override {
    if (!preparsed && failed(parseFromOption()))
      return signalPassFailure();
    func::FuncOp fn = getOperation();
    unfuse(fn); // interventions act on the unfused graph; -mix-fuse regroups after
    std::vector<Operation *> named;
    fn.walk([&](Operation *op) {
      if (isa<MixDialect>(op->getDialect()) && op->hasAttr("name") && !isa<ParamOp>(op))
        named.push_back(op);
      if (op->hasAttr("state_name") || isa<ScanOp>(op))
        states.push_back(op);
    });
    llvm::DenseSet<Operation *> removed;
    for (const dsl::RwAction &a : script.removes) {
      auto targets = match(a, named, removed);
      if (!targets)
        return signalPassFailure();
      for (const Target &t : *targets) {
        Operation *op = t.op;
        if (!t.state.empty()) {
          emitError(locOf(a)) << "cannot remove '" << t.state
                              << "': a recurrent state is not a node (zero or patch it instead)";
          return signalPassFailure();
        }
        if (op->getParentOfType<ScanOp>()) {
          emitError(locOf(a)) << "cannot remove '" << nameOf(op) << "': it is inside a scan's step";
          return signalPassFailure();
        }
        if (!actionsOf(op).remove) {
          emitError(locOf(a)) << "cannot remove '" << nameOf(op) << "' (" << op->getName()
                              << "): it has no input of its own result type to stand in for it";
          return signalPassFailure();
        }
        op->getResult(0).replaceAllUsesWith(op->getOperand(0));
        removed.insert(op);
      }
    }
    // Paths last: their clones must see every other cell's edits of the
    // nodes they copy (PathPatching below).
    for (bool paths : {false, true})
      for (auto [cellIndex, cell] : llvm::enumerate(script.cells))
        for (const dsl::RwAction &a : cell.actions)
          if (a.via.empty() != paths && failed(apply(a, static_cast<int64_t>(cellIndex), named, removed)))
            return signalPassFailure();
  }

  /// Action `a` of cell `c` on whatever it names.
  LogicalResult apply(const dsl::RwAction &a, int64_t c, const std::vector<Operation *> &named,
                      const llvm::DenseSet<Operation *> &removed) {
    auto targets = match(a, named, removed);
    if (!targets)
      return failure();
    if (!a.via.empty() && (targets->size() != 1 || !targets->front().state.empty()))
      return emitError(locOf(a)) << "the sender of a path is one node: '" << a.pattern << "' names "
                                 << (targets->front().state.empty() ? std::to_string(targets->size()) + " values"
                                                                    : "a recurrent state")
                                 << " (write the node's full name)";
    for (const Target &t : *targets) {
      if (!t.state.empty() && !a.receiver.empty() && isa<ScanOp>(t.op))
        return emitError(locOf(a)) << "'" << t.state << "' is a scan's state: an edge starts at the step value "
                                   << "that computes it ('" << stateSource(cast<ScanOp>(t.op), t.state)
                                   << "'), to a node of the step or to '" << t.state << "' (the steps after P)";
      if (!t.state.empty() && !a.receiver.empty() && !mixc::stateReaderNamed(a.receiver))
        return emitError(locAt(a.receiverLoc))
               << "'" << t.state << "' is a recurrent state: an edge out of it goes to 'next' (its next step) or "
               << "'output' (the output at the step), not '" << a.receiver << "'";
      if (failed(!t.state.empty()      ? interveneOnState(t.op, t.state, a, c)
                 : !a.via.empty()     ? interveneOnPath(t.op, a, c, named, removed)
                 : a.receiver.empty() ? intervene(t.op, a, c)
                                      : interveneOnEdge(t.op, a, c)))
        return failure();
    }
    return success();
  }

private:
  static std::string nameOf(Operation *op) {
    return op->getAttrOfType<StringAttr>("name").getValue().str();
  }
  /// The name a script gives the reader of use `u`: the reading node's, or,
  /// for a scan step's yield, the state it hands on ("" for what the step
  /// emits); other unnamed readers by their op.
  static std::string readerName(OpOperand &u) {
    Operation *reader = u.getOwner();
    if (reader->hasAttr("name"))
      return nameOf(reader);
    if (auto scan = dyn_cast_or_null<ScanOp>(reader->getParentOp()); scan && isa<YieldOp>(reader)) {
      const unsigned k = u.getOperandNumber();
      return k < scan.getStateNames().size() ? scan.getStateNames()[k].cast<StringAttr>().getValue().str() : "";
    }
    return reader->getName().getStringRef().str();
  }
  /// The name of the step value a scan hands on as `state` (what its
  /// yield returns in that state's place).
  static std::string stateSource(ScanOp scan, const std::string &state) {
    Operation *yield = scan.getBody().front().getTerminator();
    for (auto [k, name] : llvm::enumerate(scan.getStateNames()))
      if (name.cast<StringAttr>().getValue() == state)
        if (Operation *def = yield->getOperand(k).getDefiningOp(); def && def->hasAttr("name"))
          return nameOf(def);
    return "the step's new " + state;
  }
  /// A recurrence's state, or each state of a DSL scan.
  static std::vector<std::string> stateNamesOf(Operation *op) {
    if (auto name = op->getAttrOfType<StringAttr>("state_name"))
      return {name.getValue().str()};
    std::vector<std::string> out;
    if (auto scan = dyn_cast<ScanOp>(op))
      for (Attribute a : scan.getStateNames())
        out.push_back(a.cast<StringAttr>().getValue().str());
    return out;
  }
  /// What one action acts on: a node (`state` empty) or one recurrent state
  /// of the recurrence `op`. A pattern that matches several (a scan's states
  /// S_re and S_im, a node and the states beside it) yields each of them.
  struct Target {
    Operation *op;
    std::string state;
  };

  Location locOf(const dsl::RwAction &a) { return locAt(a.loc); }
  Location locAt(const dsl::SourceLoc &l) {
    if (l.file >= 0 && l.file < static_cast<int>(paths.size()))
      return FileLineColLoc::get(&getContext(), paths[l.file], l.line, l.col);
    return UnknownLoc::get(&getContext());
  }

  /// This model's recurrent states for a hint: the first few, and how many.
  std::string someStateNames(const llvm::DenseSet<Operation *> &removed) {
    std::vector<std::string> all;
    for (Operation *op : states)
      if (!removed.count(op))
        for (const std::string &state : stateNamesOf(op))
          all.push_back(state);
    std::string out;
    for (size_t i = 0; i < std::min<size_t>(all.size(), 4); ++i)
      out += (i ? ", " : "") + all[i];
    return all.size() > 4 ? out + " and " + std::to_string(all.size() - 4) + " more" : out;
  }

  std::optional<std::vector<Target>> match(const dsl::RwAction &a, const std::vector<Operation *> &named,
                                          const llvm::DenseSet<Operation *> &removed) {
    std::vector<Target> out;
    for (Operation *op : named)
      if (!removed.count(op) && dsl::matchesPattern(a.pattern, nameOf(op)))
        out.push_back({op, ""});
    // A recurrence's state is reached through the recurrence's op; every
    // state the pattern matches, not the first.
    for (Operation *op : states)
      if (!removed.count(op))
        for (const std::string &state : stateNamesOf(op))
          if (dsl::matchesStatePattern(a.pattern, state, isa<ScanOp>(op)))
            out.push_back({op, state});
    if (!out.empty())
      return out;
    // A node an earlier `remove` took out is not a typo: say so.
    for (Operation *op : named)
      if (removed.count(op) && dsl::matchesPattern(a.pattern, nameOf(op))) {
        emitError(locOf(a)) << "'" << nameOf(op) << "' was removed by a 'remove' line of this "
                            << "script, so '" << mixc::actionName(a.kind) << "' cannot act on it";
        return std::nullopt;
      }
    // The three closest names help with typos and wrong layer indices; never
    // the rejected name itself, nor a removed node.
    std::vector<std::string> names;
    for (Operation *op : named)
      if (!removed.count(op) && nameOf(op) != a.pattern)
        names.push_back(nameOf(op));
    for (Operation *op : states)
      for (const std::string &state : stateNamesOf(op))
        if (!removed.count(op) && state != a.pattern)
          names.push_back(state);
    std::string nearest;
    for (const std::string &n : mixc::support::nearestNames(a.pattern, std::move(names), 3))
      nearest += (nearest.empty() ? "" : ", ") + n;
    InFlightDiagnostic d = emitError(locOf(a)) << "no node matches '" << a.pattern << "'; nearest: " << nearest;
    if (llvm::StringRef(a.pattern).endswith(".state"))
      d << " (recurrent states exist in DSL scans and in "
        << mixc::ops::describeOps([](const mixc::ops::OpSpec &op) { return op.hasState(); }) << "; "
        << (states.empty() ? "this model has none: its mixers compute by convolution or attention"
                           : "this model's: " + someStateNames(removed))
        << ")";
    return std::nullopt;
  }

  /// The values per position a subspace of `op`'s result spans (its last
  /// dimension when there is none); errors located at the script.
  FailureOr<int64_t> subspaceWidth(Operation *op, const dsl::RwAction &a) {
    ArrayRef<int64_t> d = op->getResult(0).getType().cast<RankedTensorType>().getShape();
    auto shape = [&] {
      std::string s = "[B, T";
      for (size_t k = 2; k < d.size(); ++k)
        s += ", " + (ShapedType::isDynamic(d[k]) ? std::string("?") : std::to_string(d[k]));
      return s + "]";
    };
    if (a.hi >= 0) {
      if (!ShapedType::isDynamic(d.back()) && a.hi > d.back())
        return emitError(locOf(a)) << "channels [" << a.lo << ":" << a.hi << ") of '" << nameOf(op)
                                   << "' do not exist: its value is " << shape() << ", " << d.back()
                                   << " channels";
      return a.hi - a.lo;
    }
    if (a.head >= 0) {
      if (d.size() < 4)
        return emitError(locOf(a)) << "'" << nameOf(op) << "' has no head dimension: its value is " << shape()
                                   << "; [head=h] takes a [B, T, H, ...] value (use [a:b] for channels)";
      if (!ShapedType::isDynamic(d[2]) && a.head >= d[2])
        return emitError(locOf(a)) << "head " << a.head << " of '" << nameOf(op) << "' does not exist: its value is "
                                   << shape() << ", " << d[2] << " heads";
      int64_t width = 1;
      for (size_t k = 3; k < d.size(); ++k)
        width *= d[k];
      return width;
    }
    return d.back();
  }

  /// Whether `a` can act on `op`'s value (located errors otherwise).
  LogicalResult checkIntervention(Operation *op, const dsl::RwAction &a) {
    if (op->getParentOfType<ScanOp>()) { // a step's value [B, ...]: P is the step
      auto t = op->getNumResults() == 1 ? op->getResult(0).getType().dyn_cast<RankedTensorType>() : nullptr;
      if (!t || t.getRank() < 1 || !t.isDynamicDim(0))
        return emitError(locOf(a)) << "cannot intervene on '" << nameOf(op)
                                   << "': it is not a [B, ...] value of the scan's step";
      if (a.kind == mixc::Action::Add && t.getRank() > 2)
        return emitError(locOf(a)) << "add(FILE) on '" << nameOf(op) << "' (" << t
                                   << "): a step value takes add when it is [B, n]";
      if (a.kind == mixc::Action::Das || a.kind == mixc::Action::Mean || a.hi >= 0 || a.head >= 0)
        return emitError(locOf(a)) << "'" << nameOf(op) << "' is a value of a scan's step: it takes patch, zero, "
                                   << "noise and add, of the whole value";
    } else if (!actionsOf(op).intervene) {
      return emitError(locOf(a)) << "cannot intervene on '" << nameOf(op)
                                 << "': it is not a [B, T, ...] value";
    }
    FailureOr<int64_t> width = subspaceWidth(op, a);
    if (failed(width))
      return failure();
    if (a.kind == mixc::Action::Das && failed(checkDas(op, a)))
      return failure();
    if (a.kind == mixc::Action::Add && static_cast<int64_t>(a.vector.size()) != *width) // located, not an op dump
      return emitError(locOf(a)) << "add(FILE) holds " << a.vector.size() << " numbers, but '" << nameOf(op)
                                 << "' has " << *width << " values per position"
                                 << (a.hi >= 0 || a.head >= 0 ? " in the subspace" : " (its last dimension)");
    return success();
  }

  /// A patch or ablate op named `name` on `x`, right after `x`'s definition.
  FailureOr<Operation *> createEdit(Value x, const std::string &name, const dsl::RwAction &a, int64_t cell) {
    OpBuilder b(x.getContext());
    b.setInsertionPointAfterValue(x);
    bool patch = mixc::isInterchange(a.kind);
    OperationState state(locOf(a), patch ? PatchOp::getOperationName() : AblateOp::getOperationName());
    state.addOperands(x);
    state.addTypes(x.getType());
    state.addAttribute("name", b.getStringAttr(name));
    state.addAttribute("cell", b.getI64IntegerAttr(cell));
    state.addAttribute("role", b.getStringAttr(a.position.role));
    state.addAttribute("offset", b.getI64IntegerAttr(a.position.offset));
    state.addAttribute("index", b.getI64IntegerAttr(a.position.index));
    state.addAttribute("lo", b.getI64IntegerAttr(a.lo));
    state.addAttribute("hi", b.getI64IntegerAttr(a.hi));
    state.addAttribute("head", b.getI64IntegerAttr(a.head));
    if (a.kind == mixc::Action::Das)
      state.addAttribute("das", b.getI64IntegerAttr(a.dasK));
    if (!patch) {
      state.addAttribute("kind", b.getStringAttr(mixc::actionName(a.kind)));
      state.addAttribute("sigma", b.getF32FloatAttr(static_cast<float>(a.sigma)));
      if (a.kind == mixc::Action::Add) {
        SmallVector<float> v(a.vector.begin(), a.vector.end());
        state.addAttribute("vector", b.getDenseF32ArrayAttr(v));
      }
    }
    Operation *node = b.create(state);
    if (failed(verify(node)))
      return failure();
    return node;
  }

  /// `a` on `op`'s value: every reader sees the edited value.
  LogicalResult intervene(Operation *op, const dsl::RwAction &a, int64_t cell) {
    if (failed(checkIntervention(op, a)))
      return failure();
    Value x = op->getResult(0);
    FailureOr<Operation *> node = createEdit(x, nameOf(op) + "@c" + std::to_string(cell), a, cell);
    if (failed(node))
      return failure();
    x.replaceAllUsesExcept((*node)->getResult(0), *node);
    return success();
  }

  /// `a` on the edges from `op` into the readers `a.receiver` names: those
  /// reads alone see the edited value, every other reader the run's own.
  /// Earlier cells' patch and ablate ops on `op` (each touches its own
  /// cell's rows) are looked through to the readers behind them.
  /// Inside a scan's step (`op` a value of it) the readers are the step's
  /// nodes and, through the step's yield, the states it hands on (a reader
  /// named by the state: the state at P is edited for the steps after P
  /// alone, as `patch STATE at P`, while the step's own readers see the
  /// run's value).
  LogicalResult interveneOnEdge(Operation *op, const dsl::RwAction &a, int64_t cell) {
    if (failed(checkIntervention(op, a)))
      return failure();
    SmallVector<OpOperand *> uses;
    std::vector<std::string> readers;
    std::function<void(Value)> collect = [&](Value v) {
      for (OpOperand &u : v.getUses()) {
        Operation *reader = u.getOwner();
        if (isa<PatchOp, AblateOp>(reader)) { // another cell's edit of this value: its rows only
          collect(reader->getResult(0));
          continue;
        }
        std::string name = readerName(u);
        const bool emitted = name.empty(); // its readers are outside the step: patch the value itself
        if (emitted)
          name = "the scan's output (emitted: patch the value itself)";
        if (std::find(readers.begin(), readers.end(), name) == readers.end())
          readers.push_back(name);
        if (!emitted && (reader->hasAttr("name") || isa<YieldOp>(reader)) && dsl::matchesPattern(a.receiver, name))
          uses.push_back(&u);
      }
    };
    collect(op->getResult(0));
    if (uses.empty()) {
      std::sort(readers.begin(), readers.end());
      std::string list;
      for (const std::string &r : readers)
        list += (list.empty() ? "" : ", ") + r;
      return emitError(locAt(a.receiverLoc)) << "no reader of '" << nameOf(op) << "' matches '" << a.receiver << "'; "
                           << (readers.empty() ? std::string("nothing reads it") : "its readers: " + list);
    }
    // One edit per value the receivers read (the sender, or an earlier
    // cell's edit of it), each read moved to it.
    llvm::MapVector<Value, SmallVector<OpOperand *>> byValue;
    for (OpOperand *u : uses)
      byValue[u->get()].push_back(u);
    int64_t k = 0;
    for (auto &[value, reads] : byValue) {
      std::string name = nameOf(op) + "@c" + std::to_string(cell) + "->" + a.receiver;
      if (byValue.size() > 1)
        name += "." + std::to_string(k++);
      FailureOr<Operation *> node = createEdit(value, name, a, cell);
      if (failed(node))
        return failure();
      for (OpOperand *u : reads)
        u->set((*node)->getResult(0));
    }
    return success();
  }

  /// The value `v` with the patch and ablate ops of other cells peeled off
  /// (each touches its own cell's rows of the value it wraps).
  static Value peel(Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<PatchOp, AblateOp>(def))
        break;
      v = def->getOperand(0);
    }
    return v;
  }

  /// Path patching (protocol §6.3): `a`'s edit of `sender` reaches the
  /// model only along a.via. The path as the model reads it now is a chain
  /// of versions of its nodes (the nodes, or an earlier path cell's copies
  /// of them, which the readers of the last see); each version is copied,
  /// its read of the previous one moved to the previous copy (other cells'
  /// edits in between copied too: their rows stay theirs), and the first
  /// copy reads this cell's edit of what it read. The last copy replaces
  /// the last version for all its readers; every other read of the sender
  /// and of the path's nodes keeps the run's own value. Copies of one path
  /// stack (a later cell's copy of an earlier cell's copy), so cells that
  /// share a path each see their own edit.
  LogicalResult interveneOnPath(Operation *sender, const dsl::RwAction &a, int64_t cell,
                                const std::vector<Operation *> &named, const llvm::DenseSet<Operation *> &removed) {
    if (sender->getParentOfType<ScanOp>())
      return emitError(locOf(a)) << "'" << nameOf(sender) << "' is a value of a scan's step: a path starts at a "
                                 << "node outside a scan";
    if (failed(checkIntervention(sender, a)))
      return failure();
    FailureOr<std::vector<Operation *>> nodes = pathNodes(sender, a, named, removed);
    if (failed(nodes))
      return failure();
    FailureOr<std::vector<Operation *>> live = liveChain(sender, *nodes, a);
    if (failed(live))
      return failure();
    return copyChain(sender, *nodes, *live, a, cell);
  }

  /// The nodes a.via names, one each, checked: not a scan or inside one, no
  /// recurrence whose state a cell edits, no node another path shares.
  FailureOr<std::vector<Operation *>> pathNodes(Operation *sender, const dsl::RwAction &a,
                                                const std::vector<Operation *> &named,
                                                const llvm::DenseSet<Operation *> &removed) {
    std::vector<Operation *> nodes;
    for (size_t i = 0; i < a.via.size(); ++i) {
      std::vector<Operation *> hits;
      for (Operation *op : named)
        if (!removed.count(op) && dsl::matchesPattern(a.via[i], nameOf(op)))
          hits.push_back(op);
      if (hits.size() != 1)
        return emitError(locAt(a.viaLocs[i])) << "a path's node names one node: '" << a.via[i] << "' matches "
                                              << hits.size() << (hits.empty() ? " (mixc names lists them)" : "");
      if (hits[0]->getParentOfType<ScanOp>() || isa<ScanOp>(hits[0]))
        return emitError(locAt(a.viaLocs[i])) << "'" << a.via[i] << "' is a scan or a value of its step: a "
                                              << "path through a scan is not supported yet";
      if (hits[0]->hasAttr("state_name"))
        for (Operation &e : *hits[0]->getBlock())
          if (auto edit = dyn_cast<StateEditOp>(&e); edit && edit.getTarget() == nameOf(hits[0]))
            return emitError(locAt(a.viaLocs[i])) << "the path runs through '" << a.via[i] << "', whose state "
                                                  << "cell " << edit.getCell() << " edits: a path through an "
                                                  << "edited recurrence is not supported";
      nodes.push_back(hits[0]);
    }
    // Cells' paths stack when they are one path (a sweep over positions);
    // paths that share only some nodes would need each copy to take the
    // others' edits too, which the copies cannot: refused.
    for (const auto &[otherSender, otherNodes] : pathCells) {
      if (otherSender == sender && otherNodes == nodes)
        continue;
      for (size_t i = 0; i < nodes.size(); ++i)
        if (std::find(otherNodes.begin(), otherNodes.end(), nodes[i]) != otherNodes.end())
          return emitError(locAt(a.viaLocs[i])) << "another cell's path also runs through '" << a.via[i]
                                                << "': paths of a script share nodes only when they are one path "
                                                << "(the same sender and nodes); put the other in a script of its own";
    }
    pathCells.push_back({sender, nodes});
    return nodes;
  }

  /// The path as the model reads it now, from the last node's live version
  /// back to the first: each a version of its node that reads (through
  /// other cells' edits) the previous one, the first the sender.
  FailureOr<std::vector<Operation *>> liveChain(Operation *sender, const std::vector<Operation *> &nodes,
                                                const dsl::RwAction &a) {
    std::vector<Operation *> live(nodes.size());
    live.back() = liveVersion(nodes.back());
    for (size_t i = nodes.size(); i-- > 0;) {
      Operation *previous = i == 0 ? sender : nodes[i - 1];
      Operation *found = nullptr;
      for (Value v : live[i]->getOperands())
        if (Operation *def = peel(v).getDefiningOp(); def && versionOf(def) == previous)
          found = def;
      if (!found)
        return emitError(locAt(a.viaLocs[i])) << "'" << nameOf(nodes[i]) << "' does not read '" << nameOf(previous)
                                              << "': " << readersText(previous);
      if (i > 0)
        live[i - 1] = found;
    }
    return live;
  }

  /// The copies of `live`, first to last, each right after the version it
  /// copies; the last copy takes the last version's readers, and versions
  /// an earlier cell copied and nothing reads any more go.
  LogicalResult copyChain(Operation *sender, const std::vector<Operation *> &nodes, const std::vector<Operation *> &live,
                          const dsl::RwAction &a, int64_t cell) {
    IRMapping copied; // a live version's results → its copy's
    std::vector<Operation *> copies;
    for (size_t i = 0; i < live.size(); ++i) {
      Operation *from = i == 0 ? sender : live[i - 1];
      OpBuilder b(live[i]);
      b.setInsertionPointAfter(live[i]);
      SmallVector<Value> operands;
      for (Value v : live[i]->getOperands()) {
        Operation *def = peel(v).getDefiningOp();
        if (!def || def != from) {
          operands.push_back(v);
          continue;
        }
        FailureOr<Value> moved = i == 0 ? editOf(v, a, cell) : copyEdits(v, copied, b, cell);
        if (failed(moved))
          return failure();
        operands.push_back(*moved);
      }
      Operation *copy = b.clone(*live[i]);
      copy->setOperands(operands);
      const std::string suffix = "@c" + std::to_string(cell) + ".via";
      copy->setAttr("name", b.getStringAttr(nameOf(nodes[i]) + suffix));
      if (auto stateName = copy->getAttrOfType<StringAttr>("state_name"))
        copy->setAttr("state_name", b.getStringAttr(stateName.getValue().str() + suffix));
      for (auto [r, c] : llvm::zip(live[i]->getResults(), copy->getResults()))
        copied.map(r, c);
      originalOf[copy] = nodes[i];
      copies.push_back(copy);
    }
    for (auto [r, c] : llvm::zip(live.back()->getResults(), copies.back()->getResults()))
      r.replaceAllUsesExcept(c, copies.back());
    liveOf[nodes.back()] = copies.back();
    for (size_t i = live.size(); i-- > 0;)
      if (originalOf.count(live[i]) && live[i]->use_empty())
        eraseCopy(live[i]);
    return success();
  }

  /// An earlier cell's copy nothing reads any more, and the copied edits
  /// only it read.
  void eraseCopy(Operation *dead) {
    SmallVector<Operation *> edits;
    for (Value v : dead->getOperands())
      for (Operation *def = v.getDefiningOp(); def && isa<PatchOp, AblateOp>(def) && def->hasOneUse();
           def = def->getOperand(0).getDefiningOp())
        edits.push_back(def);
    originalOf.erase(dead);
    dead->erase();
    for (Operation *e : edits)
      if (e->use_empty() && copiedEdits.count(e)) {
        copiedEdits.erase(e);
        e->erase();
      }
  }

  /// The op the readers of `node` read now: the node, or a path cell's copy.
  Operation *liveVersion(Operation *node) {
    auto it = liveOf.find(node);
    return it == liveOf.end() ? node : it->second;
  }
  /// The node an op is a version of (itself, or what it is a copy of).
  Operation *versionOf(Operation *op) {
    auto it = originalOf.find(op);
    return it == originalOf.end() ? op : it->second;
  }
  /// This cell's edit of `v` (the sender as the path's first node reads it).
  FailureOr<Value> editOf(Value v, const dsl::RwAction &a, int64_t cell) {
    Operation *sender = peel(v).getDefiningOp();
    FailureOr<Operation *> edit =
        createEdit(v, nameOf(sender) + "@c" + std::to_string(cell) + "=>" + a.via.front(), a, cell);
    if (failed(edit))
      return failure();
    return (*edit)->getResult(0);
  }
  /// `v` (a path node's result under other cells' edits) with its root moved
  /// to the root's copy and the edits copied over it, in order.
  FailureOr<Value> copyEdits(Value v, IRMapping &copied, OpBuilder &b, int64_t cell) {
    if (Value mapped = copied.lookupOrNull(v))
      return mapped;
    Operation *edit = v.getDefiningOp();
    FailureOr<Value> inner = copyEdits(edit->getOperand(0), copied, b, cell);
    if (failed(inner))
      return failure();
    Operation *copy = b.clone(*edit);
    copy->setOperand(0, *inner);
    auto copied_ = copiedEdits.find(edit); // a copy's copy is named after the cell's own edit
    const std::string own = copied_ == copiedEdits.end() ? nameOf(edit) : copied_->second;
    copy->setAttr("name", b.getStringAttr(own + "@c" + std::to_string(cell) + ".via"));
    copiedEdits[copy] = own;
    return copy->getResult(0);
  }
  /// "its readers: a, b" or "nothing reads it", for errors.
  std::string readersText(Operation *op) {
    std::vector<std::string> readers;
    for (Value r : op->getResults())
      for (Operation *u : r.getUsers()) {
        std::string name = u->hasAttr("name") ? nameOf(u) : u->getName().getStringRef().str();
        if (std::find(readers.begin(), readers.end(), name) == readers.end())
          readers.push_back(name);
      }
    std::sort(readers.begin(), readers.end());
    std::string list;
    for (const std::string &r : readers)
      list += (list.empty() ? "" : ", ") + r;
    return readers.empty() ? "nothing reads it" : "its readers: " + list;
  }

  /// das(k) on `op`: a whole [B, T, ...] value at one position, with at
  /// least k values there; errors located at the script.
  LogicalResult checkDas(Operation *op, const dsl::RwAction &a) {
    if (a.hi >= 0 || a.head >= 0)
      return emitError(locOf(a)) << "das(" << a.dasK << ") learns its own subspace of '" << nameOf(op)
                                 << "'; it takes the whole vector, not [a:b] or [head=h]";
    if (a.position.role == "all")
      return emitError(locOf(a)) << "das(" << a.dasK << ") interchanges at one position a document, not 'all'";
    int64_t values = 1;
    for (int64_t d : op->getResult(0).getType().cast<RankedTensorType>().getShape().drop_front(2))
      values = ShapedType::isDynamic(d) || ShapedType::isDynamic(values) ? ShapedType::kDynamic : values * d;
    if (!ShapedType::isDynamic(values) && a.dasK > values)
      return emitError(locOf(a)) << "das(" << a.dasK << "): '" << nameOf(op) << "' holds " << values
                                 << " values a position, fewer than the subspace's " << a.dasK << " dimensions";
    return success();
  }

  /// A state_edit op after the recurrence `op`, naming it as its target.
  LogicalResult interveneOnState(Operation *op, const std::string &state, const dsl::RwAction &a, int64_t cell) {
    std::string opName = op->getName().stripDialect().str();
    if (std::string why = mixc::graph::stateRefusal(opName); !why.empty())
      return emitError(locOf(a)) << "cannot intervene on '" << state << "', the state of '" << nameOf(op)
                                 << "' (" << opName << "): " << why;
    if (a.position.role == "all")
      return emitError(locOf(a)) << "'" << state << "' takes one position (a state replaced at step P "
                                 << "carries on through the recurrence), not 'all'";
    if (a.hi >= 0 || a.head >= 0)
      return emitError(locOf(a)) << "'" << state << "' is edited whole: a subspace ([a:b], [head=h]) "
                                 << "applies to node values only";
    if (a.kind == mixc::Action::Das)
      return emitError(locOf(a)) << "'" << state << "' is edited whole: das(k) applies to node values only";
    int64_t size = 0;
    std::string layout;
    if (auto scan = dyn_cast<ScanOp>(op)) { // the state's declared shape, [B, ...] in the step
      auto names = stateNamesOf(op);
      const size_t k = std::find(names.begin(), names.end(), state) - names.begin();
      auto t = scan.getBody().front().getArgument(k).getType().dyn_cast<RankedTensorType>();
      if (!t)
        return emitError(locOf(a)) << "'" << state << "': the scan's state shape is unknown";
      std::tie(layout, size) = mixc::graph::scanStateLayout({t.getShape().begin(), t.getShape().end()});
    } else {
      std::vector<std::vector<int64_t>> operands;
      for (Value v : op->getOperands()) {
        auto t = v.getType().dyn_cast<RankedTensorType>();
        if (!t)
          return emitError(locOf(a)) << "'" << state << "': the recurrence's operand shapes are unknown";
        operands.emplace_back(t.getShape().begin(), t.getShape().end());
      }
      size = mixc::graph::stateSize(opName, operands);
      layout = mixc::graph::stateLayout(opName) + ", abi/StateLayout.h";
    }
    if (a.kind == mixc::Action::Add && static_cast<int64_t>(a.vector.size()) != size)
      return emitError(locOf(a)) << "add(FILE) holds " << a.vector.size() << " numbers, but '" << state
                                 << "' has " << size << " per row (" << layout << ")";
    std::string name = state + "@c" + std::to_string(cell);
    for (Operation *prior = op->getNextNode(); prior && isa<StateEditOp>(prior); prior = prior->getNextNode())
      if (cast<StateEditOp>(prior).getName() == name)
        return emitError(locOf(a)) << "cell " << cell << " intervenes on '" << state
                                   << "' twice; a cell edits a state once";
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    auto edit = b.create<StateEditOp>(
        locOf(a), b.getStringAttr(name), b.getStringAttr(nameOf(op)), b.getI64IntegerAttr(cell),
        b.getStringAttr(a.position.role), b.getI64IntegerAttr(a.position.offset),
        b.getI64IntegerAttr(a.position.index), b.getStringAttr(mixc::actionName(a.kind)),
        b.getF32FloatAttr(static_cast<float>(a.sigma)),
        a.kind == mixc::Action::Add ? b.getDenseF32ArrayAttr(SmallVector<float>(a.vector.begin(), a.vector.end()))
                        : DenseF32ArrayAttr(),
        isa<ScanOp>(op) ? b.getStringAttr(state) : StringAttr(),
        a.receiver.empty() ? StringAttr() : b.getStringAttr(a.receiver)); // an edge: the state's one reader
    return verify(edit);
  }

  LogicalResult parseFromOption() {
    dsl::SourceManager sm;
    std::ostringstream err;
    if (!dsl::loadRewrite(scriptPath, sm, script, err)) {
      emitError(UnknownLoc::get(&getContext())) << err.str();
      return failure();
    }
    paths.clear();
    for (int i = 0; i < sm.size(); ++i)
      paths.push_back(sm.path(i));
    return success();
  }

  dsl::RwScript script;
  std::vector<std::string> paths;
  std::vector<Operation *> states; // ops with a `state_name`
  bool preparsed = false;
  // Path patching's copies: a copy's original, an original's copy its
  // readers read now, and the copied edits of other cells.
  llvm::DenseMap<Operation *, Operation *> originalOf, liveOf;
  llvm::DenseMap<Operation *, std::string> copiedEdits; // a copied edit → the name of the edit it copies
  std::vector<std::pair<Operation *, std::vector<Operation *>>> pathCells; // each path cell's sender and nodes
};
} // namespace

std::unique_ptr<Pass> mix::createApplyRewritesPass() {
  return std::make_unique<ApplyRewritesPass>();
}

std::unique_ptr<Pass> mix::createApplyRewritesPass(const dsl::RwScript &script,
                                                   const std::vector<std::string> &paths) {
  return std::make_unique<ApplyRewritesPass>(script, paths);
}

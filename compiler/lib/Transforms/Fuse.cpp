//===- Fuse.cpp - group ops into mix.fused regions --------------------------===//
//
// Union-find over producer→consumer edges between fusible ops, with at most
// one mixer primitive (the anchor) per group; each group of two or more ops,
// or a lone primitive with a generated kernel, then becomes one mix.fused op
// at its last op's position, provided every value it exports is
// used only after that point (otherwise a leading op that exports early is
// left outside, before the region, or else trailing ops are left out, until
// it is). A `mix.scan` becomes a region of its own (kind "scan", its operands
// as they are, one block argument each), which the kernel back ends compile
// whole (CodeGen/ScanPlan.h); its neighbours stay in theirs. A primitive
// with kernels of its own that ends in no region is tagged `unfused` with
// why (abi/Graph.h), so the driver can say it runs on LibTorch.
//
//===----------------------------------------------------------------------===//
#include "abi/Graph.h"
#include "mix/MixOps.h"
#include "mix/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <utility>

namespace mix {
#define GEN_PASS_DEF_MIXFUSE
#include "mix/Passes.h.inc"
} // namespace mix

using namespace mlir;
using namespace mix;

namespace {
/// Per-position ops: a kernel computes them in the same loop as a neighbour.
bool isPerPosition(Operation *op) {
  return op->hasTrait<mix::OpTrait::PerElement>() || op->hasTrait<mix::OpTrait::PerRow>();
}

/// Mixer primitives: each anchors at most one region.
bool isAnchor(Operation *op) { return op->hasTrait<mix::OpTrait::MixerAnchor>(); }

/// A value read by an intervention must stay a real node, so its producer
/// is not fused.
bool isIntervened(Operation *op) {
  for (Operation *user : op->getUsers())
    if (isa<PatchOp, AblateOp>(user))
      return true;
  return false;
}

bool isFusible(Operation *op) { return (isPerPosition(op) || isAnchor(op)) && !isIntervened(op); }

struct Group {
  SmallVector<Operation *> ops; // in block order
  Operation *anchor = nullptr;
};

/// Whether `op`, a member, hands a value to an op outside the group that
/// runs before the group's last op (where the region will stand).
bool exportsEarly(Operation *op, const Group &g, const llvm::SmallPtrSetImpl<Operation *> &members) {
  Operation *last = g.ops.back();
  for (Operation *user : op->getUsers())
    if (!members.count(user) && user->getBlock() == last->getBlock() && user->isBeforeInBlock(last))
      return true;
  return false;
}

/// Whether every value the group's ops produce for ops outside the group is
/// used after the group's last op.
bool exportsAfterEnd(const Group &g, const llvm::SmallPtrSetImpl<Operation *> &members) {
  return llvm::none_of(g.ops, [&](Operation *op) { return exportsEarly(op, g, members); });
}

/// A member that reads nothing from the group and exports early: it can
/// stay outside, before the region, which then reads its value as an
/// input. Mamba without its conv: SiLU(x) feeds x_proj, long before the
/// scan, and also the scan; the scan keeps its prologue and epilogue.
Operation *earlyHead(const Group &g, const llvm::SmallPtrSetImpl<Operation *> &members) {
  for (Operation *op : g.ops)
    if (exportsEarly(op, g, members) &&
        llvm::none_of(op->getOperands(), [&](Value v) { return members.count(v.getDefiningOp()); }))
      return op;
  return nullptr;
}

void buildRegion(const Group &g) {
  llvm::SmallPtrSet<Operation *, 16> members(g.ops.begin(), g.ops.end());
  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  for (Operation *op : g.ops) {
    for (Value v : op->getOperands())
      if (!members.count(v.getDefiningOp()))
        inputs.insert(v);
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !members.count(u); }))
        outputs.push_back(r);
  }
  Operation *last = g.ops.back();
  OpBuilder b(last);
  Operation *named = g.anchor ? g.anchor : last;
  std::string kind = g.anchor ? g.anchor->getName().stripDialect().str() : "elementwise";
  SmallVector<Type> resultTypes;
  for (Value v : outputs)
    resultTypes.push_back(v.getType());
  auto fused = b.create<FusedOp>(last->getLoc(), resultTypes,
                                 named->getAttrOfType<StringAttr>("name"), b.getStringAttr(kind),
                                 inputs.getArrayRef());
  Block *body = new Block();
  fused.getBody().push_back(body);
  IRMapping map;
  for (Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  for (Operation *op : g.ops)
    inner.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  inner.create<YieldOp>(last->getLoc(), yielded);
  for (auto [v, r] : llvm::zip(outputs, fused.getResults()))
    v.replaceUsesWithIf(r, [&](OpOperand &use) { return !members.count(use.getOwner()); });
  for (Operation *op : llvm::reverse(g.ops))
    op->erase();
}

/// `scan` alone in a region of kind "scan". Unlike buildRegion, operands
/// are not deduplicated: block argument i is the scan's operand i, so the
/// runtime can hand the region's inputs to the scan's reference loop.
void buildScanRegion(ScanOp scan) {
  OpBuilder b(scan);
  auto fused = b.create<FusedOp>(scan.getLoc(), scan.getResultTypes(), scan.getNameAttr(), b.getStringAttr("scan"),
                                 scan.getInputs());
  Block *body = new Block();
  fused.getBody().push_back(body);
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  Operation *copy = inner.clone(*scan.getOperation()); // isolated from above: only its operands change
  for (auto [i, v] : llvm::enumerate(scan.getInputs()))
    copy->setOperand(static_cast<unsigned>(i), body->addArgument(v.getType(), v.getLoc()));
  inner.create<YieldOp>(scan.getLoc(), copy->getResults());
  scan.getOperation()->replaceAllUsesWith(fused.getResults());
  scan.erase();
}

struct FusePass : mix::impl::MixFuseBase<FusePass> {
  void runOnOperation() override {
    Block &block = getOperation().getBody().front();
    for (ScanOp scan : llvm::make_early_inc_range(block.getOps<ScanOp>()))
      if (!isIntervened(scan))
        buildScanRegion(scan);
    llvm::EquivalenceClasses<Operation *> classes;
    llvm::DenseMap<Operation *, Operation *> anchorOf; // class leader → its anchor
    for (Operation &op : block) {
      if (!isFusible(&op))
        continue;
      classes.insert(&op);
      if (isAnchor(&op))
        anchorOf[&op] = &op;
      for (Value v : op.getOperands()) {
        Operation *producer = v.getDefiningOp();
        if (!producer || producer->getBlock() != &block || classes.findValue(producer) == classes.end())
          continue;
        Operation *a = classes.getLeaderValue(producer), *c = classes.getLeaderValue(&op);
        if (a == c)
          continue;
        Operation *anchorA = anchorOf.lookup(a), *anchorC = anchorOf.lookup(c);
        if (anchorA && anchorC)
          continue; // one primitive per region
        classes.unionSets(a, c);
        Operation *leader = classes.getLeaderValue(a);
        anchorOf[leader] = anchorA ? anchorA : anchorC;
      }
    }
    // Groups in block order of their first op.
    llvm::MapVector<Operation *, Group> groups;
    for (Operation &op : block)
      if (classes.findValue(&op) != classes.end()) {
        Group &g = groups[classes.getLeaderValue(&op)];
        g.ops.push_back(&op);
        if (isAnchor(&op))
          g.anchor = &op;
      }
    // A lone op is a region only if it is a primitive with a kernel of its
    // own (softmax attention between two matmuls): nothing to fuse otherwise.
    auto lonePrimitive = [](Operation *op) { return op && op->hasTrait<mix::OpTrait::GeneratedAnchor>(); };
    for (auto &[leader, g] : groups) {
      Operation *dropped = nullptr; // the anchor, when it had to leave the group
      while (g.ops.size() >= 2) {
        llvm::SmallPtrSet<Operation *, 16> members(g.ops.begin(), g.ops.end());
        if (exportsAfterEnd(g, members))
          break;
        Operation *out = earlyHead(g, members);
        if (out)
          g.ops.erase(llvm::find(g.ops, out));
        else
          out = g.ops.pop_back_val();
        if (out == g.anchor)
          dropped = std::exchange(g.anchor, nullptr);
      }
      if (g.ops.size() >= 2 || lonePrimitive(g.anchor))
        buildRegion(g);
      if (lonePrimitive(dropped)) // its kernel without its neighbours
        buildRegion(Group{{dropped}, dropped});
    }
    markUnfused(block);
  }

  /// Tags each primitive with kernels that is left outside every region.
  /// Only one an intervention reads can be: every other such op is in its
  /// group's region or, dropped from it, in a region alone.
  static void markUnfused(Block &block) {
    for (Operation &op : block)
      if ((op.hasTrait<mix::OpTrait::GeneratedAnchor>() || isa<ScanOp>(op)) && isIntervened(&op))
        op.setAttr(mixc::graph::kUnfusedAttr, StringAttr::get(op.getContext(), "an intervention reads its result"));
  }
};
} // namespace

std::unique_ptr<Pass> mix::createFusePass() { return std::make_unique<FusePass>(); }

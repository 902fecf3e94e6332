//===- GraphImport.cpp - runtime graph -> mix dialect -----------------------===//
#include "mix/GraphImport.h"
#include "mix/MixOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
namespace graph = mixc::graph;

namespace {
Type tensorType(OpBuilder &b, const std::vector<int64_t> &shape, bool ids = false) {
  SmallVector<int64_t> dims;
  for (int64_t d : shape)
    dims.push_back(d == graph::kDynamic ? ShapedType::kDynamic : d);
  return RankedTensorType::get(dims, ids ? Type(b.getI64Type()) : Type(b.getF32Type()));
}

Attribute attr(OpBuilder &b, const graph::AttrValue &a) {
  switch (a.kind) {
  case graph::AttrValue::Kind::Int: return b.getI64IntegerAttr(a.i);
  case graph::AttrValue::Kind::Float: return b.getF32FloatAttr(static_cast<float>(a.f));
  case graph::AttrValue::Kind::Bool: return b.getBoolAttr(a.b);
  case graph::AttrValue::Kind::Str: return b.getStringAttr(a.s);
  case graph::AttrValue::Kind::Ints: return b.getDenseI64ArrayAttr(a.ints);
  case graph::AttrValue::Kind::Floats: {
    SmallVector<float> v(a.floats.begin(), a.floats.end());
    return b.getDenseF32ArrayAttr(v);
  }
  }
  return {};
}
/// `nodes` as ops at `b`'s insertion point; a scan's body becomes its
/// region (its arguments and nodes named as in the graph).
void importNodes(OpBuilder &b, const std::vector<graph::Node> &nodes, llvm::StringMap<Value> &values) {
  for (const graph::Node &n : nodes) {
    OperationState state(b.getUnknownLoc(), "mix." + n.op);
    for (const std::string &in : n.inputs)
      state.addOperands(values.lookup(in));
    state.addAttribute("name", b.getStringAttr(n.name));
    for (const auto &[k, v] : n.attrs) {
      if (k == "fused") // regions are formed again by -mix-fuse
        continue;
      if (n.op == "scan" && k == "state_names") { // comma-separated in the graph
        SmallVector<StringRef> names;
        if (!v.s.empty())
          StringRef(v.s).split(names, ',');
        state.addAttribute(k, b.getStrArrayAttr(names));
        continue;
      }
      state.addAttribute(k, attr(b, v));
    }
    for (const auto &shape : n.shapes)
      state.addTypes(tensorType(b, shape));
    if (n.op == "scan")
      state.addRegion();
    Operation *op = b.create(state);
    if (n.op == "scan") {
      Block *step = new Block;
      op->getRegion(0).push_back(step);
      llvm::StringMap<Value> inner;
      for (const graph::Input &a : n.bodyArgs)
        inner[a.name] = step->addArgument(tensorType(b, a.shape), b.getUnknownLoc());
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(step);
      importNodes(b, n.body, inner);
      SmallVector<Value> results;
      for (const std::string &r : n.bodyResults)
        results.push_back(inner.lookup(r));
      b.create<mix::YieldOp>(b.getUnknownLoc(), results);
    }
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      values[r == 0 ? n.name : n.name + "#" + std::to_string(r)] = op->getResult(r);
  }
}
} // namespace

OwningOpRef<ModuleOp> mix::importGraph(MLIRContext &ctx, const graph::Graph &g) {
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  SmallVector<Type> args;
  for (const graph::Input &in : g.inputs)
    args.push_back(tensorType(b, in.shape, in.dtype == "i64"));
  b.setInsertionPointToEnd(module->getBody());
  auto fn = b.create<func::FuncOp>(b.getUnknownLoc(), g.model, b.getFunctionType(args, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  llvm::StringMap<Value> values;
  for (auto [i, in] : llvm::enumerate(g.inputs))
    values[in.name] = body->getArgument(i);
  for (const graph::Param &p : g.params) {
    auto op = b.create<ParamOp>(b.getUnknownLoc(), tensorType(b, p.shape), p.name, p.shape,
                                p.init, p.trainable);
    values[p.name] = op.getResult();
  }
  importNodes(b, g.nodes, values);
  SmallVector<Value> outs;
  for (const std::string &o : g.outputs)
    outs.push_back(values.lookup(o));
  b.create<func::ReturnOp>(b.getUnknownLoc(), outs);
  fn.setType(b.getFunctionType(args, ValueRange(outs).getTypes()));
  return module;
}

//===- GraphExport.cpp - mix dialect -> runtime graph -----------------------===//
#include "mix/GraphExport.h"
#include "mix/MixOps.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>

using namespace mlir;
namespace graph = mixc::graph;

namespace {
std::vector<int64_t> shapeOf(Type t) {
  std::vector<int64_t> out;
  for (int64_t d : t.cast<RankedTensorType>().getShape())
    out.push_back(ShapedType::isDynamic(d) ? graph::kDynamic : d);
  return out;
}

bool toAttr(Attribute a, graph::AttrValue &out) {
  if (auto b = a.dyn_cast<BoolAttr>()) {
    out.kind = graph::AttrValue::Kind::Bool;
    out.b = b.getValue();
  } else if (auto i = a.dyn_cast<IntegerAttr>()) {
    out.kind = graph::AttrValue::Kind::Int;
    out.i = i.getInt();
  } else if (auto f = a.dyn_cast<FloatAttr>()) {
    out.kind = graph::AttrValue::Kind::Float;
    out.f = f.getValueAsDouble();
  } else if (auto s = a.dyn_cast<StringAttr>()) {
    out.kind = graph::AttrValue::Kind::Str;
    out.s = s.getValue().str();
  } else if (auto l = a.dyn_cast<DenseI64ArrayAttr>()) {
    out.kind = graph::AttrValue::Kind::Ints;
    out.ints.assign(l.asArrayRef().begin(), l.asArrayRef().end());
  } else if (auto l = a.dyn_cast<DenseF32ArrayAttr>()) {
    out.kind = graph::AttrValue::Kind::Floats;
    out.floats.assign(l.asArrayRef().begin(), l.asArrayRef().end());
  } else if (auto l = a.dyn_cast<ArrayAttr>()) { // names (a scan's state_names): comma-separated
    out.kind = graph::AttrValue::Kind::Str;
    for (Attribute e : l) {
      auto str = e.dyn_cast<StringAttr>();
      if (!str || str.getValue().contains(','))
        return false;
      out.s += (out.s.empty() ? "" : ",") + str.getValue().str();
    }
  } else {
    return false;
  }
  return true;
}

std::string locString(Location loc) {
  if (auto f = loc.dyn_cast<FileLineColLoc>())
    return (f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" +
            std::to_string(f.getColumn()));
  return "";
}
} // namespace

LogicalResult mix::exportGraph(func::FuncOp model, const std::vector<std::string> &inputNames,
                               graph::Graph &g) {
  llvm::DenseMap<Value, std::string> names;
  for (auto [i, arg] : llvm::enumerate(model.getArguments())) {
    if (!arg.getType().isa<RankedTensorType>())
      return model.emitError() << "model input " << i << " is unranked";
    std::string name = i < inputNames.size() ? inputNames[i] : "input" + std::to_string(i);
    names[arg] = name;
    auto elem = arg.getType().cast<RankedTensorType>().getElementType();
    g.inputs.push_back({name, shapeOf(arg.getType()), elem.isInteger(64) ? "i64" : "f32"});
  }
  // A fused region's ops become ordinary nodes tagged with the region
  // (`fused`), so the interpreter runs them one by one and a kernel back end
  // can take the region whole.
  // A scan's step: its arguments get names (the states' names; an input's
  // name with [t] when sliced), its ops become the scan node's body.
  std::function<LogicalResult(Block &, const std::string &, std::vector<graph::Node> &)> exportBlock;
  auto exportScan = [&](ScanOp scan, graph::Node &node) -> LogicalResult {
    Block &step = scan.getBody().front();
    const int64_t states = static_cast<int64_t>(scan.getNumStates());
    for (auto [k, arg] : llvm::enumerate(step.getArguments())) {
      const int64_t i = static_cast<int64_t>(k) - states;
      std::string name = i < 0 ? scan.getStateNames()[k].cast<StringAttr>().getValue().str()
                               : names.lookup(scan.getInputs()[i]) + (scan.getSliced()[i] ? "[t]" : "");
      if (!arg.getType().isa<RankedTensorType>())
        return scan.emitOpError() << "has an unranked step argument; run shape inference first";
      names[arg] = name;
      node.bodyArgs.push_back({name, shapeOf(arg.getType()), "f32"});
    }
    if (failed(exportBlock(step, "", node.body)))
      return failure();
    for (Value v : cast<YieldOp>(step.getTerminator()).getValues())
      node.bodyResults.push_back(names.lookup(v));
    return success();
  };
  exportBlock = [&](Block &block, const std::string &group, std::vector<graph::Node> &out) -> LogicalResult {
    for (Operation &op : block) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          g.outputs.push_back(names.lookup(v));
        continue;
      }
      if (auto fused = dyn_cast<FusedOp>(op)) {
        Block &inner = fused.getBody().front();
        for (auto [arg, in] : llvm::zip(inner.getArguments(), fused.getInputs()))
          names[arg] = names.lookup(in);
        if (failed(exportBlock(inner, fused.getName().str(), out)))
          return failure();
        auto yield = cast<YieldOp>(inner.getTerminator());
        graph::Region region;
        region.name = fused.getName().str();
        region.kind = fused.getKind().str();
        for (Value in : fused.getInputs())
          region.inputs.push_back(names.lookup(in));
        for (auto [r, v] : llvm::zip(fused.getResults(), yield.getValues())) {
          names[r] = names.lookup(v);
          region.outputs.push_back(names[r]);
        }
        g.regions.push_back(std::move(region));
        continue;
      }
      if (isa<YieldOp>(op))
        continue;
      if (!isa<MixDialect>(op.getDialect()) || isa<CallOp>(op))
        return op.emitOpError() << "cannot be exported to a runtime graph (inline first)";
      for (Type t : op.getResultTypes())
        if (!t.isa<RankedTensorType>())
          return op.emitOpError() << "has an unranked result; run shape inference first";
      std::string name = op.getAttrOfType<StringAttr>("name").getValue().str();
      if (auto p = dyn_cast<ParamOp>(op)) {
        g.params.push_back({name, std::vector<int64_t>(p.getShape().begin(), p.getShape().end()),
                            p.getInit().str(), p.getTrainable()});
        names[p.getResult()] = name;
        continue;
      }
      graph::Node node;
      node.name = name;
      node.op = op.getName().stripDialect().str();
      for (Value v : op.getOperands())
        node.inputs.push_back(names.lookup(v));
      // Attributes left at their ODS default are written out: the runtime
      // keeps no defaults of its own (one home: MixOps.td).
      NamedAttrList attrs(op.getAttrDictionary());
      op.getName().populateDefaultAttrs(attrs);
      for (NamedAttribute a : attrs) {
        if (a.getName() == "name")
          continue;
        graph::AttrValue value;
        if (!toAttr(a.getValue(), value))
          return op.emitOpError() << "has attribute '" << a.getName().str()
                                  << "' of a kind the runtime graph cannot hold";
        node.attrs[a.getName().str()] = value;
      }
      for (auto [i, r] : llvm::enumerate(op.getResults())) {
        node.shapes.push_back(shapeOf(r.getType()));
        names[r] = i == 0 ? name : name + "#" + std::to_string(i);
      }
      if (!group.empty()) {
        graph::AttrValue tag;
        tag.kind = graph::AttrValue::Kind::Str;
        tag.s = group;
        node.attrs["fused"] = tag;
      }
      node.loc = locString(op.getLoc());
      if (auto scan = dyn_cast<ScanOp>(op))
        if (failed(exportScan(scan, node)))
          return failure();
      out.push_back(std::move(node));
    }
    return success();
  };
  return exportBlock(model.getBody().front(), "", g.nodes);
}

//===- MLIRGen.cpp - elaborated program -> mix dialect ----------------------===//
#include "mix/MLIRGen.h"
#include "mix/MixOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
namespace dsl = mixc::dsl;

namespace {
class Importer {
public:
  Importer(MLIRContext &ctx, const std::vector<std::string> &paths)
      : ctx_(ctx), builder_(&ctx), paths_(paths) {}

  OwningOpRef<ModuleOp> run(const dsl::Program &program) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(builder_.getUnknownLoc());
    for (size_t i = 0; i < program.funcs.size(); ++i)
      if (!program.funcs[i].scanStep) // a scan's step becomes its mix.scan's region
        importFunc(*module, program, static_cast<int>(i), static_cast<int>(i) == program.entry);
    return module;
  }

private:
  Location loc(const dsl::SourceLoc &l) {
    if (l.file < 0 || l.file >= static_cast<int>(paths_.size()))
      return builder_.getUnknownLoc();
    return FileLineColLoc::get(&ctx_, paths_[l.file], l.line, l.col);
  }

  Type elementType(const std::string &dtype) {
    return dtype == "i64" ? Type(builder_.getI64Type()) : Type(builder_.getF32Type());
  }

  Type unranked(const std::string &dtype) { return UnrankedTensorType::get(elementType(dtype)); }

  Type ranked(const dsl::TensorType &t) {
    SmallVector<int64_t> shape;
    for (const dsl::Dim &d : t.shape)
      shape.push_back(d.symbolic() ? ShapedType::kDynamic : d.size);
    return RankedTensorType::get(shape, elementType(t.dtype));
  }

  Attribute attr(const dsl::Attr &a) {
    switch (a.kind) {
    case dsl::Attr::Kind::Int: return builder_.getI64IntegerAttr(a.i);
    case dsl::Attr::Kind::Float: return builder_.getF32FloatAttr(static_cast<float>(a.f));
    case dsl::Attr::Kind::Bool: return builder_.getBoolAttr(a.b);
    case dsl::Attr::Kind::Str: return builder_.getStringAttr(a.s);
    case dsl::Attr::Kind::Ints: return builder_.getDenseI64ArrayAttr(a.ints);
    }
    return {};
  }

  void importFunc(ModuleOp module, const dsl::Program &program, int index, bool entry) {
    const dsl::Func &fn = program.funcs[index];
    SmallVector<Type> argTypes, resultTypes;
    for (const dsl::TensorType &t : fn.args)
      argTypes.push_back(entry ? ranked(t) : unranked(t.dtype));
    for (const dsl::TensorType &t : fn.resultTypes)
      resultTypes.push_back(unranked(t.dtype));
    builder_.setInsertionPointToEnd(module.getBody());
    auto func = builder_.create<func::FuncOp>(loc(fn.loc), fn.symbol,
                                              builder_.getFunctionType(argTypes, resultTypes));
    if (!entry)
      func.setPrivate();
    Block *body = func.addEntryBlock();
    builder_.setInsertionPointToEnd(body);
    SmallVector<Value> results = importNodes(program, fn, *body);
    builder_.create<func::ReturnOp>(loc(fn.loc), results);
  }

  /// `fn`'s nodes at the end of `body` (whose arguments are fn's args);
  /// returns the values of fn's results.
  SmallVector<Value> importNodes(const dsl::Program &program, const dsl::Func &fn, Block &body) {
    std::vector<Operation *> ops;
    auto value = [&](const dsl::Ref &r) -> Value {
      if (r.arg >= 0)
        return body.getArgument(r.arg);
      return ops[r.node]->getResult(r.result);
    };
    for (const dsl::Node &n : fn.nodes) {
      if (n.op == "scan") {
        SmallVector<Value> inputs;
        for (const dsl::Ref &r : n.inputs)
          inputs.push_back(value(r));
        ops.push_back(importScan(program, n, inputs));
        continue;
      }
      OperationState state(loc(n.loc), "mix." + n.op);
      for (const dsl::Ref &r : n.inputs)
        state.addOperands(value(r));
      if (n.op == "call") {
        state.addAttribute("callee", SymbolRefAttr::get(&ctx_, program.funcs[n.callee].symbol));
        state.addAttribute("scope", builder_.getStringAttr(n.scope));
      } else {
        state.addAttribute("name", builder_.getStringAttr(n.name));
      }
      for (const auto &[k, a] : n.attrs)
        state.addAttribute(k, attr(a));
      // Parameters and constants know their shapes; everything else is
      // left for shape inference.
      bool known = n.op == "param" || n.op == "constant";
      SmallVector<Attribute> frontEnd;
      for (const dsl::TensorType &t : n.results) {
        state.addTypes(known ? ranked(t) : unranked(t.dtype));
        frontEnd.push_back(TypeAttr::get(ranked(t)));
      }
      // The front end's shapes, for shape inference to check its own against.
      if (!known && n.op != "call" && !frontEnd.empty())
        state.addAttribute(mix::kFrontEndTypesAttr, builder_.getArrayAttr(frontEnd));
      ops.push_back(builder_.create(state));
    }
    SmallVector<Value> results;
    for (const dsl::Ref &r : fn.results)
      results.push_back(value(r));
    return results;
  }

  /// A scan node: a mix.scan whose region is its step function's body.
  Operation *importScan(const dsl::Program &program, const dsl::Node &n, ArrayRef<Value> inputs) {
    const dsl::Func &step = program.funcs[n.callee];
    int64_t numStates = 0;
    std::vector<int64_t> sliced;
    SmallVector<StringRef> stateNames;
    std::string joined;
    for (const auto &[k, a] : n.attrs) {
      if (k == "num_states")
        numStates = a.i;
      else if (k == "sliced")
        sliced = a.ints;
      else if (k == "state_names")
        joined = a.s;
    }
    for (StringRef rest = joined; !rest.empty();) {
      auto [head, tail] = rest.split(',');
      stateNames.push_back(head);
      rest = tail;
    }
    SmallVector<Type> resultTypes;
    SmallVector<Attribute> frontEnd;
    for (const dsl::TensorType &t : n.results) {
      resultTypes.push_back(unranked(t.dtype));
      frontEnd.push_back(TypeAttr::get(ranked(t)));
    }
    auto scan = builder_.create<mix::ScanOp>(loc(n.loc), resultTypes, builder_.getStringAttr(n.name),
                                             builder_.getI64IntegerAttr(numStates),
                                             builder_.getDenseI64ArrayAttr(sliced),
                                             builder_.getStrArrayAttr(stateNames), inputs);
    scan->setAttr(mix::kFrontEndTypesAttr, builder_.getArrayAttr(frontEnd));
    Block *body = new Block;
    scan.getBody().push_back(body);
    for (const dsl::TensorType &t : step.args)
      body->addArgument(ranked(t), loc(step.loc));
    OpBuilder::InsertionGuard guard(builder_);
    builder_.setInsertionPointToEnd(body);
    SmallVector<Value> results = importNodes(program, step, *body);
    builder_.create<mix::YieldOp>(loc(step.loc), results);
    return scan;
  }

  MLIRContext &ctx_;
  OpBuilder builder_;
  const std::vector<std::string> &paths_;
};
} // namespace

OwningOpRef<ModuleOp> mix::importProgram(MLIRContext &ctx, const dsl::Program &program,
                                         const std::vector<std::string> &paths) {
  return Importer(ctx, paths).run(program);
}

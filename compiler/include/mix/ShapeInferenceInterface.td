//===- ShapeInferenceInterface.td - shape inference --------*- tablegen -*-===//
//
// As in MLIR's Toy tutorial (chapter 4): the importer emits unranked results
// and the shape-inference pass asks each op to compute its result types from
// its (already inferred) operand types.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_SHAPE_INFERENCE_INTERFACE
#define MIX_SHAPE_INFERENCE_INTERFACE

include "mlir/IR/OpBase.td"

def ShapeInferenceOpInterface : OpInterface<"ShapeInference"> {
  let description = [{
    Infers the result types of an op whose operands are all ranked.
    Returns failure (after emitting an error at the op) when the operand
    shapes violate the op's shape rules.
  }];
  let cppNamespace = "::mix";
  let methods = [
    InterfaceMethod<"Infer and set the result types.",
                    "::mlir::LogicalResult", "inferShapes", (ins), [{}],
      /*defaultImplementation=*/[{
        ::llvm::SmallVector<::mlir::Type> types;
        if (::mlir::failed($_op.shapeRule(types)))
          return ::mlir::failure();
        for (auto [result, type] : ::llvm::zip($_op->getResults(), types))
          result.setType(type);
        return ::mlir::success();
      }]>
  ];
}

#endif // MIX_SHAPE_INFERENCE_INTERFACE

//===- ElementCodeInterface.td - an elementwise op's formula in C++ -*- tablegen -*-===//
//
// The one home of what a per-element op computes, as C++ on floats: the
// kernel printers (compiler/lib/CodeGen) write it into CPU and CUDA loops
// without keeping a table of op names of their own.
//
//===----------------------------------------------------------------------===//
#ifndef MIX_ELEMENT_CODE_INTERFACE
#define MIX_ELEMENT_CODE_INTERFACE

include "mlir/IR/OpBase.td"

def ElementCodeOpInterface : OpInterface<"ElementCode"> {
  let description = [{
    The forward formula is an expression in which `$0` and `$1` stand for
    the operands' elements (each may be written more than once). The
    gradient of operand i is an expression of the floats `a`, `b` (the
    operands), `y` (the result) and `g` (the result's gradient).
  }];
  let cppNamespace = "::mix";
  let methods = [
    StaticInterfaceMethod<"The result's element, in terms of $0 (and $1).",
                          "::llvm::StringRef", "cppForward">,
    StaticInterfaceMethod<"The gradient flowing to operand `i`.",
                          "::llvm::StringRef", "cppGradient", (ins "unsigned":$i)>,
    StaticInterfaceMethod<"Whether the forward formula calls a function "
                          "(exp, sigmoid, erf, ...) that costs more than "
                          "reading a kept float: a backward keeps such a "
                          "value rather than computing it again.",
                          "bool", "cppCostly">,
  ];
}

#endif // MIX_ELEMENT_CODE_INTERFACE

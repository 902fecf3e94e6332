//===- CpuPrinter.cpp - a region plan as C++17 with OpenMP ------------------===//
//
// Row phases are `#pragma omp for` loops over rows; parameter gradients are
// summed in per-thread partials (mixk::Partials) and added once; temporary
// buffers are std::vectors.
//
//===----------------------------------------------------------------------===//
#include "RegionPrinter.h"

using namespace mlir;

namespace mix::codegen {
namespace {
class CpuPrinter : public RegionPrinter {
public:
  using RegionPrinter::RegionPrinter;

private:
  bool cuda() const override { return false; }
  std::string anchorLastArgument() const override { return "th"; }

  void printEntry(llvm::raw_ostream &os, bool backward) override {
    os << "extern \"C\" void " << sym << (backward ? "_backward" : "_forward") << "(const mixk_args *a) {\n";
    printDeclarations(os, backward);
    printPhases(os, backward);
    os << "}\n";
  }

  void printBuffer(llvm::raw_ostream &os, const std::string &name, const std::string &count) override {
    os << "  std::vector<float> " << name << "_(" << count << ", 0.f); float *" << name << " = " << name
       << "_.data();\n";
  }

  void printSerial(llvm::raw_ostream &os, const std::string &body) override { os << body; }

  void printFlat(llvm::raw_ostream &os, const std::string &count, const std::string &stmt) override {
    os << "  for (int64_t i = 0; i < " << count << "; ++i) " << stmt << ";\n";
  }

  void printRowLoop(llvm::raw_ostream &os, const std::string &inner, const std::vector<Value> &invariants,
                    bool backward) override {
    os << "  {\n";
    if (backward)
      for (Value v : invariants)
        os << "    mixk::Partials P_" << full(v) << "(th, " << plan.at(v).n << ");\n";
    os << "#pragma omp parallel num_threads(th)\n  {\n";
    if (backward)
      for (Value v : invariants)
        os << "    float *p_" << full(v) << " = P_" << full(v) << ".mine();\n";
    os << "#pragma omp for schedule(static)\n";
    os << "    for (int64_t r = 0; r < rows; ++r) {\n";
    os << inner;
    os << "    }\n  }\n";
    if (backward)
      for (Value v : invariants)
        os << "    P_" << full(v) << ".addTo(" << gfull(v) << ");\n";
    os << "  }\n";
  }
};
} // namespace

std::unique_ptr<RegionPrinter> makeCpuPrinter(RegionPlan &plan, std::string sym) {
  return std::make_unique<CpuPrinter>(plan, std::move(sym));
}

} // namespace mix::codegen

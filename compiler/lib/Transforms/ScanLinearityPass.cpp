//===- ScanLinearityPass.cpp - annotate every scan with its linearity ------===//
#include "mix/Passes.h"
#include "mix/ScanLinearity.h"

namespace mix {
#define GEN_PASS_DEF_MIXSCANLINEARITY
#include "mix/Passes.h.inc"
} // namespace mix

using namespace mlir;

namespace {
struct ScanLinearityPass : mix::impl::MixScanLinearityBase<ScanLinearityPass> {
  using MixScanLinearityBase::MixScanLinearityBase;

  void runOnOperation() override {
    getOperation().walk([&](mix::ScanOp scan) {
      mix::ScanLinearity result = mix::analyzeScanLinearity(scan);
      mix::annotateScanLinearity(scan, result);
      if (remarks && !result.chunkable) {
        Operation *at = result.culprit ? result.culprit : scan.getOperation();
        at->emitRemark() << "scan '" << scan.getName() << "' keeps its sequential form: " << result.reason;
      }
    });
  }
};
} // namespace

std::unique_ptr<Pass> mix::createScanLinearityPass(bool remarks) {
  MixScanLinearityOptions options;
  options.remarks = remarks;
  return std::make_unique<ScanLinearityPass>(options);
}

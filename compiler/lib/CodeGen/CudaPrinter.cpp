//===- CudaPrinter.cpp - a region plan as CUDA C++ --------------------------===//
//
// The same phases as device kernels: a row phase is a grid-stride loop with
// one thread per row (parameter gradients summed in registers, then one
// atomicAdd each), the hoisted phase a one-thread kernel, and the anchor a
// call into templates/cuda_primitives.cuh. Buffers the CPU code keeps in
// std::vector live in one `scratch` allocation (cudaMallocAsync on the
// caller's stream). Kernels receive the arguments by value as a mixk_dev
// (a mixk_args holds host arrays of pointers, which a kernel cannot read).
//
//===----------------------------------------------------------------------===//
#include "RegionPrinter.h"

using namespace mlir;

namespace mix::codegen {
namespace {
class CudaPrinter : public RegionPrinter {
public:
  using RegionPrinter::RegionPrinter;

  std::string refuses() override {
    if (plan.args.size() > kCudaMaxInputs || plan.results.size() > kCudaMaxOutputs)
      return "more than " + std::to_string(kCudaMaxInputs) + " inputs or " + std::to_string(kCudaMaxOutputs) +
             " outputs (the CUDA argument block)";
    return "";
  }

private:
  bool cuda() const override { return true; }
  std::string anchorLastArgument() const override { return "stream"; }

  /// A kernel of `body` (after the prelude) launched over `count` threads.
  void launch(llvm::raw_ostream &os, const std::string &body, const std::string &count) {
    std::string name = sym + "_k" + std::to_string(kernelCount++);
    kernelText += "__global__ void " + name + "(mixk_dev dv) {\n  const mixk_dev *a = &dv;\n" + prelude +
                  body + "}\n\n";
    os << "  MIXK_LAUNCH(" << name << ", mixk::blocksFor(" << count << "), mixk::kThreads, stream)(dv);\n";
  }

  void printBuffer(llvm::raw_ostream &os, const std::string &name, const std::string &count) override {
    os << "  float *" << name << " = a->scratch + " << scratch << ";\n";
    scratch += " + " + count;
  }

  void printSerial(llvm::raw_ostream &os, const std::string &body) override {
    if (!body.empty())
      launch(os, "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n" + body + "  }\n", "1");
  }

  void printFlat(llvm::raw_ostream &os, const std::string &count, const std::string &stmt) override {
    launch(os, "  MIXK_GRID_LOOP(i, " + count + ") " + stmt + ";\n", count);
  }

  void printRowLoop(llvm::raw_ostream &os, const std::string &inner, const std::vector<Value> &invariants,
                    bool backward) override {
    std::string body;
    if (backward)
      for (Value v : invariants)
        body += "  float p_" + full(v) + "[" + std::to_string(plan.at(v).n) + "] = {};\n";
    body += "  MIXK_GRID_LOOP(r, rows) {\n" + inner + "  }\n";
    if (backward)
      for (Value v : invariants)
        body += "  for (int64_t j = 0; j < " + std::to_string(plan.at(v).n) + "; ++j) if (p_" + full(v) +
                "[j] != 0.f) atomicAdd(&" + gfull(v) + "[j], p_" + full(v) + "[j]);\n";
    launch(os, body, "rows");
  }

  void printEntry(llvm::raw_ostream &os, bool backward) override {
    prelude.clear();
    scratch = "0";
    llvm::raw_string_ostream pre(prelude);
    printDeclarations(pre, backward);
    pre.flush();
    std::string hostText;
    llvm::raw_string_ostream host(hostText);
    printPhases(host, backward);
    host.flush();
    os << kernelText;
    kernelText.clear();
    os << "extern \"C\" void " << sym << (backward ? "_backward" : "_forward") << "(const mixk_args *args) {\n";
    os << "  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);\n";
    os << "  mixk_dev dv{};\n";
    os << "  for (int i = 0; i < 4; ++i) dv.dims[i] = args->dims[i];\n";
    os << "  dv.ndims = args->ndims; dv.threads = args->threads; dv.saved = args->saved;\n";
    if (!backward)
      os << "  dv.state = args->state;\n";
    os << "  for (int i = 0; i < " << plan.args.size() << "; ++i) dv.in[i] = args->in[i];\n";
    if (!backward)
      os << "  for (int i = 0; i < " << plan.results.size() << "; ++i) dv.out[i] = args->out[i];\n";
    else
      os << "  for (int i = 0; i < " << plan.args.size() << "; ++i) dv.gin[i] = args->gin[i];\n"
         << "  for (int i = 0; i < " << plan.results.size() << "; ++i) dv.gout[i] = args->gout[i];\n";
    os << "  {\n    const mixk_dev *a = &dv;\n    const int64_t rows = " << rows() << ";\n"
       << "    const int64_t n = " << scratch << ";\n    (void)rows;\n"
       << "    if (n > 0) {\n"
       << "      cudaMallocAsync(reinterpret_cast<void **>(&dv.scratch), n * sizeof(float), stream);\n"
       << "      cudaMemsetAsync(dv.scratch, 0, n * sizeof(float), stream);\n    }\n  }\n";
    os << "  const mixk_dev *a = &dv;\n" << prelude << hostText;
    os << "  if (dv.scratch) cudaFreeAsync(dv.scratch, stream);\n}\n\n";
  }

  // Kernels written so far (printed before the host function), the prelude
  // every kernel repeats, and the scratch floats the prelude carves up.
  std::string kernelText, prelude, scratch = "0";
  int kernelCount = 0;
};
} // namespace

std::string cudaArgumentBlock() {
  return "struct mixk_dev {\n"
         "  int64_t dims[4];\n"
         "  int32_t ndims, threads;\n"
         "  const float *in[" + std::to_string(kCudaMaxInputs) + "];\n"
         "  float *out[" + std::to_string(kCudaMaxOutputs) + "];\n"
         "  float *saved;\n"
         "  const float *gout[" + std::to_string(kCudaMaxOutputs) + "];\n"
         "  float *gin[" + std::to_string(kCudaMaxInputs) + "];\n"
         "  float *scratch;\n"
         "  const mixk_state *state; /* host memory: read by the host function only */\n"
         "};\n";
}

std::unique_ptr<RegionPrinter> makeCudaPrinter(RegionPlan &plan, std::string sym) {
  return std::make_unique<CudaPrinter>(plan, std::move(sym));
}

} // namespace mix::codegen

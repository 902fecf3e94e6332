//===- SmallSum.cpp - a sum over a small dim inside each position -----------===//
//
// H3's readout sums q·Y over one of a head's dims: [B, T, H, 2, 2] summed
// over dim 3. LibTorch's reduction takes 2.5-3.7 ms for that at d = 64-128
// (its TensorIterator is built for long reductions: ~10 ns an element here),
// two layers of it a tenth of H3's step. With the reduced dim (size I) and
// the dims after it (J elements) small and known at compile time, each
// leading row is a handful of adds: out[r, j] = Σ_i x[r, i, j], i in order.
// The backward is LibTorch's own: the gradient expanded over the summed dim.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Primitives.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

namespace mixc::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

template <int I, int J> void sumRows(const float *x, float *out, int64_t rows) {
  at::parallel_for(0, rows, 4096, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float *xr = x + r * I * J;
      float *o = out + r * J;
      for (int j = 0; j < J; ++j) {
        float acc = xr[j];
        for (int i = 1; i < I; ++i)
          acc += xr[i * J + j];
        o[j] = acc;
      }
    }
  });
}

using SumRowsFn = void (*)(const float *, float *, int64_t);

/// The kernel for a reduced dim of I elements with J after it, or null.
SumRowsFn sumRowsFor(int64_t I, int64_t J) {
#define MIXC_SUM_ROWS(i, j)                                                                                  \
  if (I == i && J == j)                                                                                      \
    return sumRows<i, j>;
  MIXC_SUM_ROWS(2, 1) MIXC_SUM_ROWS(2, 2) MIXC_SUM_ROWS(2, 4) MIXC_SUM_ROWS(2, 8)
  MIXC_SUM_ROWS(4, 1) MIXC_SUM_ROWS(4, 2) MIXC_SUM_ROWS(4, 4) MIXC_SUM_ROWS(4, 8)
  MIXC_SUM_ROWS(8, 1) MIXC_SUM_ROWS(8, 2) MIXC_SUM_ROWS(8, 4) MIXC_SUM_ROWS(8, 8)
#undef MIXC_SUM_ROWS
  return nullptr;
}

struct SmallSumFn : torch::autograd::Function<SmallSumFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor x, int64_t axis, bool keepdim) {
    int64_t rows = 1, J = 1;
    for (int64_t d = 0; d < axis; ++d)
      rows *= x.size(d);
    for (int64_t d = axis + 1; d < x.dim(); ++d)
      J *= x.size(d);
    std::vector<int64_t> shape = x.sizes().vec();
    shape[axis] = 1;
    at::Tensor out = at::empty(shape, x.options());
    sumRowsFor(x.size(axis), J)(x.data_ptr<float>(), out.data_ptr<float>(), rows);
    ctx->saved_data["shape"] = x.sizes().vec();
    ctx->saved_data["axis"] = axis;
    ctx->saved_data["keepdim"] = keepdim;
    return {keepdim ? out : out.squeeze(axis)};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    const std::vector<int64_t> shape = ctx->saved_data["shape"].toIntVector();
    const int64_t axis = ctx->saved_data["axis"].toInt();
    at::Tensor g = ctx->saved_data["keepdim"].toBool() ? grads[0] : grads[0].unsqueeze(axis);
    return {g.expand(shape), at::Tensor(), at::Tensor()};
  }
};
} // namespace

at::Tensor sumOver(const at::Tensor &x, int64_t axis, bool keepdim) {
  if (axis < 0)
    axis += x.dim();
  if (plainReferences() || axis <= 0 || axis >= x.dim() || !x.is_cpu() || x.scalar_type() != at::kFloat ||
      !x.is_contiguous())
    return x.sum(axis, keepdim);
  int64_t J = 1;
  for (int64_t d = axis + 1; d < x.dim(); ++d)
    J *= x.size(d);
  if (!sumRowsFor(x.size(axis), J))
    return x.sum(axis, keepdim);
  return SmallSumFn::apply(x, axis, keepdim)[0];
}

} // namespace mixc::rt

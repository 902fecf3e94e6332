//===- BroadcastMul.cpp - a · b broadcast within each position --------------===//
//
// H3's per-head outer product k ⊗ v ([B, T, H, 2, 1] · [B, T, H, 1, 2]) and
// its q readout ([B, T, H, 2, 1] · [B, T, H, 2, 2]) broadcast inside each
// (b, t, h) block. LibTorch's mul does that through strided iterators, and
// its backward reduces each gradient back to its operand's shape with a
// sum over dims of size 1 or 2: together ~1.5 ms per product at d = 64.
// Here the leading dims both operands share form R rows, the rest a small
// inner block with a precomputed offset table, and the backward
// accumulates each operand's gradient in the same loop.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Primitives.h"

#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <vector>

namespace mixc::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The largest inner block this path takes. Its loops go through offset
/// tables and do not vectorise: for H3's 2 × 2 blocks that beats LibTorch's
/// per-row iterators, but a [d_k, 1] · [d_k, d] broadcast (GLA's decay on its
/// state, 64 floats a row) ran its backward at half LibTorch's speed.
constexpr int64_t kMaxInner = 16;

/// The plan of one product: rows, the inner sizes, and for each inner output
/// element the offsets of its factors in their operands' inner blocks.
struct Plan {
  int64_t rows = 1, na = 1, nb = 1, no = 1, innerRank = 0;
  std::vector<int64_t> ia, ib;
  std::vector<int64_t> outShape;
};

/// Whether a · b is a within-position broadcast this path takes: float CPU
/// tensors of one rank, at least one leading dim both have in full, a
/// broadcast only after it, and a small inner block.
bool planOf(const at::Tensor &a, const at::Tensor &b, Plan &p) {
  if (a.dim() != b.dim() || a.dim() < 2 || a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat ||
      !a.is_cpu() || !b.is_cpu() || a.sizes() == b.sizes() || plainReferences())
    return false;
  const int64_t rank = a.dim();
  int64_t lead = 0;
  while (lead < rank && a.size(lead) == b.size(lead))
    ++lead;
  if (lead == 0)
    return false;
  p.outShape = at::infer_size(a.sizes(), b.sizes());
  for (int64_t d = 0; d < lead; ++d)
    p.rows *= p.outShape[d];
  p.innerRank = rank - lead;
  std::vector<int64_t> sa(rank, 0), sb(rank, 0); // inner strides, 0 where broadcast
  for (int64_t d = rank - 1, ka = 1, kb = 1; d >= lead; --d) {
    sa[d] = a.size(d) == 1 ? 0 : ka;
    sb[d] = b.size(d) == 1 ? 0 : kb;
    ka *= a.size(d), kb *= b.size(d);
    p.no *= p.outShape[d];
  }
  for (int64_t d = lead; d < rank; ++d)
    p.na *= a.size(d), p.nb *= b.size(d);
  if (p.no > kMaxInner || p.rows < 16)
    return false;
  p.ia.resize(p.no), p.ib.resize(p.no);
  for (int64_t i = 0; i < p.no; ++i) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int64_t d = rank - 1; d >= lead; --d) {
      const int64_t k = rest % p.outShape[d];
      rest /= p.outShape[d];
      oa += k * sa[d], ob += k * sb[d];
    }
    p.ia[i] = oa, p.ib[i] = ob;
  }
  return true;
}

/// Whether g's leading `lead` dims collapse to rows a single stride apart
/// (dims of size 1 skipped: their strides are arbitrary), and that stride.
bool rowStrideOf(const at::Tensor &g, int64_t lead, int64_t &rowStride) {
  rowStride = 0;
  int64_t span = 0; // rows the dims inside the current one cover
  for (int64_t d = lead - 1; d >= 0; --d) {
    if (g.size(d) == 1)
      continue;
    if (span == 0)
      rowStride = g.stride(d), span = g.size(d);
    else if (g.stride(d) != rowStride * span)
      return false;
    else
      span *= g.size(d);
  }
  return true;
}

struct BroadcastMulFn : torch::autograd::Function<BroadcastMulFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor a, at::Tensor b) {
    Plan p;
    planOf(a, b, p); // checked by the caller
    a = a.contiguous(), b = b.contiguous();
    at::Tensor out = at::empty(p.outShape, a.options());
    const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
    float *po = out.data_ptr<float>();
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t i = 0; i < p.no; ++i)
        po[r * p.no + i] = pa[r * p.na + p.ia[i]] * pb[r * p.nb + p.ib[i]];
    ctx->save_for_backward({a, b});
    return {out};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    at::Tensor a = saved[0], b = saved[1], g = grads[0];
    Plan p;
    planOf(a, b, p);
    // The gradient is read through its strides where its leading dims
    // collapse to one row stride: H3's readout product is followed by a
    // sum, whose backward hands over an expand (a stride of 0), and a
    // contiguous copy of it cost ~2 ms a layer at d = 128.
    const int64_t lead = static_cast<int64_t>(p.outShape.size()) - p.innerRank;
    int64_t rowStride = 0;
    if (!rowStrideOf(g, lead, rowStride)) {
      g = g.contiguous();
      rowStrideOf(g, lead, rowStride);
    }
    std::vector<int64_t> ig(p.no);
    for (int64_t i = 0; i < p.no; ++i) {
      int64_t rest = i, o = 0;
      for (int64_t d = g.dim() - 1; d >= lead; --d) {
        o += (rest % g.size(d)) * g.stride(d);
        rest /= g.size(d);
      }
      ig[i] = o;
    }
    at::Tensor ga = at::empty_like(a, at::MemoryFormat::Contiguous), gb = at::empty_like(b, at::MemoryFormat::Contiguous);
    const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>(), *pg = g.data_ptr<float>();
    float *pga = ga.data_ptr<float>(), *pgb = gb.data_ptr<float>();
    for (int64_t r = 0; r < p.rows; ++r) {
      float *gar = pga + r * p.na, *gbr = pgb + r * p.nb;
      const float *ar = pa + r * p.na, *br = pb + r * p.nb, *gr = pg + r * rowStride;
      std::fill(gar, gar + p.na, 0.0f);
      std::fill(gbr, gbr + p.nb, 0.0f);
      for (int64_t i = 0; i < p.no; ++i) {
        const float gi = gr[ig[i]];
        gar[p.ia[i]] += gi * br[p.ib[i]];
        gbr[p.ib[i]] += gi * ar[p.ia[i]];
      }
    }
    return {ga, gb};
  }
};
} // namespace

at::Tensor broadcastMul(const at::Tensor &a, const at::Tensor &b) {
  Plan p;
  if (!planOf(a, b, p))
    return a * b;
  return BroadcastMulFn::apply(a, b)[0];
}

} // namespace mixc::rt

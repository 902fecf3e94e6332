//===- FusedAdamW.cpp - AdamW as one pass over each parameter ---------------===//
#include "runtime/train/FusedAdamW.h"
#include "runtime/core/TorchCompat.h"

#include <cmath>

namespace mixc::train {
namespace {

/// The update of FusedAdamW.h over n floats. The factors are computed once,
/// in double, as LibTorch computes them, then rounded to float as its
/// kernels round their scalars.
/// (1 − β) is taken in double too: 1 − 0.999f is 4.7e-5 off 0.001 in float.
void adamwLoop(float *p, const float *g, float *m, float *v, int64_t n, float decay, float beta1, float oneMinus1,
               float beta2, float oneMinus2, float stepSize, float rootBias2, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i] * decay, gi = g[i];
    float mi = m[i] * beta1 + oneMinus1 * gi;
    float vi = v[i] * beta2 + oneMinus2 * gi * gi;
    m[i] = mi, v[i] = vi;
    p[i] = pi - stepSize * (mi / (std::sqrt(vi) / rootBias2 + eps));
  }
}

bool plainFloat(const at::Tensor &t) {
  return t.scalar_type() == at::kFloat && t.is_contiguous() && t.device().is_cpu() && !t.is_sparse();
}

compat::OptimizerStateKey keyOf(const at::Tensor &p) { return compat::optimizerStateKey(p); }

/// Whether every tensor the step touches suits the fused loop (a state
/// restored from a checkpoint is checked too).
bool fusable(torch::optim::AdamW &opt) {
  for (auto &group : opt.param_groups()) {
    if (static_cast<torch::optim::AdamWOptions &>(group.options()).amsgrad())
      return false;
    for (auto &p : group.params()) {
      if (!p.grad().defined())
        continue;
      if (!plainFloat(p) || !plainFloat(p.grad()))
        return false;
      auto it = opt.state().find(keyOf(p));
      if (it != opt.state().end()) {
        auto &s = static_cast<torch::optim::AdamWParamState &>(*it->second);
        if (!plainFloat(s.exp_avg()) || !plainFloat(s.exp_avg_sq()))
          return false;
      }
    }
  }
  return true;
}
} // namespace

void fusedAdamWStep(torch::optim::AdamW &opt) {
  if (!fusable(opt)) {
    opt.step(); // rare (not float32, strided, amsgrad): LibTorch's ops
    return;
  }
  torch::NoGradGuard noGrad;
  for (auto &group : opt.param_groups()) {
    auto &o = static_cast<torch::optim::AdamWOptions &>(group.options());
    const double lr = o.lr(), beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto &p : group.params()) {
      if (!p.grad().defined())
        continue;
      const compat::OptimizerStateKey key = keyOf(p);
      auto &states = opt.state();
      auto it = states.find(key);
      if (it == states.end()) { // as adamw.cpp: zero moments at step 0
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = states.emplace(key, std::move(state)).first;
      }
      auto &state = static_cast<torch::optim::AdamWParamState &>(*it->second);
      state.step(state.step() + 1);
      const double bias1 = 1 - std::pow(beta1, state.step()), bias2 = 1 - std::pow(beta2, state.step());
      at::Tensor &m = state.exp_avg(), &v = state.exp_avg_sq();
      adamwLoop(p.data_ptr<float>(), p.grad().data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
                p.numel(), static_cast<float>(1 - lr * o.weight_decay()), static_cast<float>(beta1),
                static_cast<float>(1 - beta1), static_cast<float>(beta2), static_cast<float>(1 - beta2),
                static_cast<float>(lr / bias1), static_cast<float>(std::sqrt(bias2)), static_cast<float>(o.eps()));
    }
  }
}

} // namespace mixc::train

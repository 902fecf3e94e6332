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

/// protocol §4's AdamW hyperparameters for one step.
struct Hyper {
  double lr, weightDecay, beta1, beta2, eps;
};

/// Step `step` (counted from 1) of AdamW over n floats, the factors as
/// adamw.cpp computes them.
void adamwStep(const Hyper &h, int64_t step, float *p, const float *g, float *m, float *v, int64_t n) {
  const double bias1 = 1 - std::pow(h.beta1, step), bias2 = 1 - std::pow(h.beta2, step);
  adamwLoop(p, g, m, v, n, static_cast<float>(1 - h.lr * h.weightDecay), static_cast<float>(h.beta1),
            static_cast<float>(1 - h.beta1), static_cast<float>(h.beta2), static_cast<float>(1 - h.beta2),
            static_cast<float>(h.lr / bias1), static_cast<float>(std::sqrt(bias2)), static_cast<float>(h.eps));
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
    const Hyper h{o.lr(), o.weight_decay(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps()};
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
      at::Tensor &m = state.exp_avg(), &v = state.exp_avg_sq();
      adamwStep(h, state.step(), p.data_ptr<float>(), p.grad().data_ptr<float>(), m.data_ptr<float>(),
                v.data_ptr<float>(), p.numel());
    }
  }
}

ReplicaAdamW::ReplicaAdamW(std::vector<at::Tensor> params, int64_t replicas)
    : params_(std::move(params)), steps_(replicas, 0), replicas_(replicas) {
  for (const at::Tensor &p : params_) {
    TORCH_CHECK(p.scalar_type() == at::kFloat && p.is_contiguous() && p.dim() >= 1 && p.size(0) == replicas,
                "ReplicaAdamW: a parameter of ", p.sizes(), " is not a contiguous float32 tensor with ", replicas,
                " replicas first");
    expAvg_.push_back(at::zeros_like(p));
    expAvgSq_.push_back(at::zeros_like(p));
  }
}

void ReplicaAdamW::zeroGrad() {
  for (at::Tensor &p : params_)
    p.mutable_grad() = at::Tensor();
}

void ReplicaAdamW::step(const std::vector<double> &lr, const std::vector<double> &weightDecay,
                        const std::vector<bool> &active) {
  TORCH_CHECK(static_cast<int64_t>(lr.size()) == replicas_ && static_cast<int64_t>(weightDecay.size()) == replicas_ &&
                  static_cast<int64_t>(active.size()) == replicas_,
              "ReplicaAdamW::step: one learning rate, weight decay and flag a replica");
  for (int64_t k = 0; k < replicas_; ++k)
    steps_[k] += active[k] ? 1 : 0;
  if (!params_.empty() && !params_[0].device().is_cpu())
    return tensorStep(lr, weightDecay, active);
  torch::NoGradGuard noGrad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor &p = params_[i];
    if (!p.grad().defined())
      continue;
    const at::Tensor g = p.grad().contiguous();
    const int64_t n = p.numel() / replicas_; // floats a replica
    for (int64_t k = 0; k < replicas_; ++k)
      if (active[k])
        adamwStep({lr[k], weightDecay[k], 0.9, 0.999, 1e-8}, steps_[k], p.data_ptr<float>() + k * n,
                  g.data_ptr<float>() + k * n, expAvg_[i].data_ptr<float>() + k * n,
                  expAvgSq_[i].data_ptr<float>() + k * n, n);
  }
}

void ReplicaAdamW::stepWithTensorOps(const std::vector<double> &lr, const std::vector<double> &weightDecay,
                                     const std::vector<bool> &active) {
  for (int64_t k = 0; k < replicas_; ++k)
    steps_[k] += active[k] ? 1 : 0;
  tensorStep(lr, weightDecay, active);
}

/// adamwLoop's update as tensor ops over all replicas at once, each
/// replica's factors a [K, 1, ...] tensor; a replica not active gets the
/// factors that leave it as it is (decay 1, moments kept, step size 0).
void ReplicaAdamW::tensorStep(const std::vector<double> &lr, const std::vector<double> &weightDecay,
                              const std::vector<bool> &active) {
  torch::NoGradGuard noGrad;
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // Per replica: decay, m's keep and take, v's keep and take, step size, √(1 − β2ᵗ).
  std::vector<float> f(7 * static_cast<size_t>(replicas_));
  for (int64_t k = 0; k < replicas_; ++k) {
    const bool on = active[k];
    const double bias1 = 1 - std::pow(beta1, steps_[k]), bias2 = 1 - std::pow(beta2, steps_[k]);
    const float row[7] = {on ? static_cast<float>(1 - lr[k] * weightDecay[k]) : 1.0f,
                          on ? static_cast<float>(beta1) : 1.0f,
                          on ? static_cast<float>(1 - beta1) : 0.0f,
                          on ? static_cast<float>(beta2) : 1.0f,
                          on ? static_cast<float>(1 - beta2) : 0.0f,
                          on ? static_cast<float>(lr[k] / bias1) : 0.0f,
                          on ? static_cast<float>(std::sqrt(bias2)) : 1.0f};
    for (int j = 0; j < 7; ++j)
      f[static_cast<size_t>(j * replicas_ + k)] = row[j];
  }
  const at::Tensor factors = at::from_blob(f.data(), {7, replicas_}, at::kFloat).to(params_.front().device());
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor &p = params_[i];
    if (!p.grad().defined())
      continue;
    std::vector<int64_t> shape(static_cast<size_t>(p.dim()), 1);
    shape[0] = replicas_;
    auto factor = [&](int j) { return factors[j].view(shape); };
    const at::Tensor g = p.grad();
    at::Tensor &m = expAvg_[i], &v = expAvgSq_[i];
    m.mul_(factor(1)).addcmul_(g, factor(2));
    v.mul_(factor(3)).addcmul_(g * g, factor(4));
    p.mul_(factor(0)).sub_(factor(5) * (m / (v.sqrt() / factor(6) + eps)));
  }
}

void ReplicaAdamW::exportReplica(int64_t k, const std::vector<at::Tensor> &member, torch::optim::AdamW &opt) const {
  TORCH_CHECK(member.size() == params_.size(), "exportReplica: ", member.size(), " tensors for ", params_.size());
  if (steps_[k] == 0)
    return; // as a run before its first step: no state
  for (size_t i = 0; i < member.size(); ++i) {
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->step(steps_[k]);
    state->exp_avg(expAvg_[i].select(0, k).to(member[i].device(), /*non_blocking=*/false, /*copy=*/true));
    state->exp_avg_sq(expAvgSq_[i].select(0, k).to(member[i].device(), /*non_blocking=*/false, /*copy=*/true));
    opt.state()[keyOf(member[i])] = std::move(state);
  }
}

std::string ReplicaAdamW::importReplica(int64_t k, const std::vector<at::Tensor> &member, torch::optim::AdamW &opt) {
  if (member.size() != params_.size())
    return "the checkpoint's optimiser holds " + std::to_string(member.size()) + " tensors, the pack " +
           std::to_string(params_.size());
  torch::NoGradGuard noGrad;
  int64_t steps = -1;
  for (size_t i = 0; i < member.size(); ++i) {
    auto it = opt.state().find(keyOf(member[i]));
    if (it == opt.state().end()) {
      expAvg_[i].select(0, k).zero_();
      expAvgSq_[i].select(0, k).zero_();
      continue;
    }
    auto &s = static_cast<torch::optim::AdamWParamState &>(*it->second);
    if (steps >= 0 && s.step() != steps)
      return "the checkpoint's optimiser has tensors at different steps";
    steps = s.step();
    expAvg_[i].select(0, k).copy_(s.exp_avg());
    expAvgSq_[i].select(0, k).copy_(s.exp_avg_sq());
  }
  steps_[k] = std::max<int64_t>(steps, 0);
  return "";
}

} // namespace mixc::train

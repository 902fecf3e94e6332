//===- Init.h - parameter initialisation rules ------------------*- C++ -*-===//
#ifndef MIXC_RUNTIME_CORE_INIT_H
#define MIXC_RUNTIME_CORE_INIT_H

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace mixc::rt {

/// A parsed init rule: `normal(0.02)` -> {"normal", {0.02}}.
struct InitRule {
  std::string name;
  std::vector<double> args;
};

/// Parses and checks a rule's name and arity; returns "" or the problem.
std::string parseInit(const std::string &text, InitRule &rule);

/// A new tensor of `shape` drawn by `rule` from ATen's default generator
/// (seed it first with at::manual_seed for determinism). Rules:
///   normal(std) uniform(lo,hi) zeros ones constant(v)
///   s4d_real_log            [D, N]: log(1..N) in every row (Mamba's A_log)
///   dt_bias(min,max,floor)  softplus⁻¹(Δ₀), Δ₀ log-uniform in [min,max], ≥ floor
///   log_of_uniform(lo,hi)   log(u), u ~ U(lo, hi) (fla's Gated DeltaNet A_log: lo 0, hi 16)
///   implicit_pos(f)         [L, 3]: [n/(L−1), cos(2πfn/L), −sin(2πfn/L)]
///   linspace(a,b)           a..b over all elements, in order
///   shift_e1                zeros, first column 1 (H3 shift SSM's B)
///   s4d_lin_imag            [H, N]: π·n in every row
at::Tensor initTensor(const InitRule &rule, at::IntArrayRef shape);

} // namespace mixc::rt

#endif

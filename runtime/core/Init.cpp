//===- Init.cpp - parameter initialisation rules (protocol §4) --------------===//
#include "runtime/core/Init.h"
#include "support/Limits.h"

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace mixc::rt {

std::string parseInit(const std::string &text, InitRule &rule) {
  static const std::map<std::string, size_t> arity = {
      {"normal", 1}, {"uniform", 2}, {"zeros", 0}, {"ones", 0}, {"constant", 1},
      {"s4d_real_log", 0}, {"dt_bias", 3}, {"log_of_uniform", 2}, {"implicit_pos", 1}, {"linspace", 2},
      {"shift_e1", 0}, {"s4d_lin_imag", 0}};
  rule = InitRule{};
  size_t open = text.find('(');
  rule.name = text.substr(0, open);
  if (open != std::string::npos) {
    if (text.back() != ')')
      return "malformed init rule '" + text + "'";
    std::stringstream ss(text.substr(open + 1, text.size() - open - 2));
    std::string item;
    while (std::getline(ss, item, ',')) {
      char *end = nullptr;
      double v = std::strtod(item.c_str(), &end);
      if (item.empty() || *end)
        return "malformed number '" + item + "' in init rule '" + text + "'";
      // A graph file may be edited: nan or inf would train to a NaN loss that reads like a bad rate.
      if (!support::fitsFloat(v))
        return "init rule '" + text + "' has the argument '" + item + "', which is not a finite float";
      rule.args.push_back(v);
    }
  }
  auto it = arity.find(rule.name);
  if (it == arity.end())
    return "unknown init rule '" + rule.name + "'";
  if (it->second != rule.args.size())
    return "init rule '" + rule.name + "' takes " + std::to_string(it->second) + " arguments";
  return "";
}

at::Tensor initTensor(const InitRule &r, at::IntArrayRef shape) {
  auto opts = at::TensorOptions().dtype(at::kFloat);
  const std::vector<double> &a = r.args;
  if (r.name == "normal")
    return at::randn(shape, opts) * a[0];
  if (r.name == "uniform")
    return at::rand(shape, opts) * (a[1] - a[0]) + a[0];
  if (r.name == "zeros")
    return at::zeros(shape, opts);
  if (r.name == "ones")
    return at::ones(shape, opts);
  if (r.name == "constant")
    return at::full(shape, a[0], opts);
  if (r.name == "s4d_real_log") {
    int64_t n = shape.back();
    return at::log(at::arange(1, n + 1, opts)).expand(shape).contiguous();
  }
  if (r.name == "dt_bias") {
    // Mamba: Δ₀ = exp(U(log min, log max)) clamped below at floor; the bias
    // is softplus⁻¹(Δ₀) = Δ₀ + log(−expm1(−Δ₀)).
    at::Tensor dt = at::exp(at::rand(shape, opts) * (std::log(a[1]) - std::log(a[0])) + std::log(a[0]));
    dt = at::clamp_min(dt, a[2]);
    return dt + at::log(-at::expm1(-dt));
  }
  if (r.name == "log_of_uniform") {
    // u = 0 (lo = 0 and a draw of exactly 0) would give −inf: the smallest
    // normal float instead, e^(−87.3) ≈ 0 to every later use.
    at::Tensor u = at::rand(shape, opts) * (a[1] - a[0]) + a[0];
    return at::log(at::clamp_min(u, std::numeric_limits<float>::min()));
  }
  if (r.name == "implicit_pos") {
    int64_t L = shape[0];
    at::Tensor n = at::arange(L, opts);
    at::Tensor t = n / static_cast<double>(std::max<int64_t>(L - 1, 1));
    at::Tensor w = 2.0 * M_PI * a[0] * n / static_cast<double>(L);
    return at::stack({t, at::cos(w), -at::sin(w)}, 1).reshape(shape).contiguous();
  }
  if (r.name == "linspace") {
    int64_t total = 1;
    for (int64_t d : shape)
      total *= d;
    return at::linspace(a[0], a[1], total, opts).reshape(shape).contiguous();
  }
  if (r.name == "shift_e1") {
    at::Tensor t = at::zeros(shape, opts);
    t.select(-1, 0).fill_(1.0);
    return t;
  }
  if (r.name == "s4d_lin_imag") {
    int64_t n = shape.back();
    return (M_PI * at::arange(n, opts)).expand(shape).contiguous();
  }
  TORCH_CHECK(false, "unknown init rule ", r.name);
}

} // namespace mixc::rt

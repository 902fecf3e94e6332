//===- Flops.cpp - the floating-point work of a graph's forward pass --------===//
#include "abi/Flops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace mixc::graph {
namespace {
/// `shape` with its run-time dims replaced: the first by B, the second by T.
std::vector<int64_t> concrete(std::vector<int64_t> shape, int64_t B, int64_t T) {
  int seen = 0;
  for (int64_t &d : shape)
    if (d == kDynamic)
      d = seen++ == 0 ? B : T;
  return shape;
}

double numel(const std::vector<int64_t> &s) {
  double n = 1;
  for (int64_t d : s)
    n *= static_cast<double>(d);
  return n;
}

/// Product of all dims but the last: the rows a per-row op sees.
double rows(const std::vector<int64_t> &s) { return s.empty() ? 1 : numel(s) / static_cast<double>(s.back()); }

/// Real FFT of size n: 2.5·n·log2(n) (half a complex one's 5·n·log2 n).
double rfft(double n) { return 2.5 * n * std::log2(n); }

/// A causal convolution of `sequences` sequences of length T with a T-tap
/// filter: the cheaper of the direct sum (T(T+1)/2 multiply-adds) and the
/// FFT route (size 2T: three real transforms and a complex product).
double causalLongConv(double sequences, int64_t T) {
  const double t = static_cast<double>(T), n = 2 * t;
  return sequences * std::min(t * (t + 1), 3 * rfft(n) + 6 * (n / 2 + 1));
}

const std::set<std::string> kMoves = {"param",  "constant", "time_slice", "embedding", "split",  "concat",
                                      "reshape", "permute",  "tap",        "patch",     "ablate", "state_edit"};
const std::set<std::string> kNorms = {"layernorm", "rmsnorm", "l2norm"};
} // namespace

FlopCount forwardFlops(const Graph &g, int64_t B, int64_t T, int64_t readoutRows) {
  FlopCount out;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto &[name, shape] : valueShapes(g))
    shapes[name] = concrete(shape, B, T);
  // `nodes` with the shapes of `values` (a scan's step sees its own).
  // `record`: add to byOp (a scan's step ops are the scan's, not their own).
  std::function<double(const std::vector<Node> &, std::map<std::string, std::vector<int64_t>> &, bool)> count;
  count = [&](const std::vector<Node> &nodes, std::map<std::string, std::vector<int64_t>> &values, bool record) {
    double sum = 0;
    for (const Node &n : nodes) {
      std::vector<std::vector<int64_t>> in;
      for (const std::string &i : n.inputs)
        in.push_back(values.count(i) ? values.at(i) : std::vector<int64_t>{});
      std::vector<int64_t> y = n.shapes.empty() ? std::vector<int64_t>{} : concrete(n.shapes[0], B, T);
      for (size_t r = 0; r < n.shapes.size(); ++r)
        values[r == 0 ? n.name : n.name + "#" + std::to_string(r)] = concrete(n.shapes[r], B, T);
      double f = 0;
      const std::string &op = n.op;
      auto dim = [&](size_t i, int fromEnd) { // operand i's dim, counted from the end (1: last)
        return in.size() > i && in[i].size() >= static_cast<size_t>(fromEnd)
                   ? static_cast<double>(in[i][in[i].size() - fromEnd])
                   : 0.0;
      };
      if (kMoves.count(op)) {
        f = 0;
      } else if (op == "linear") { // x [.., in] -> y [.., out] (w is [out, in])
        f = 2 * rows(in[0]) * dim(0, 1) * (y.empty() ? 0 : static_cast<double>(y.back())) +
            (in.size() > 2 ? numel(y) : 0);
      } else if (op == "unembed") { // x [B, T, d], wte [V, d]
        const double r = readoutRows >= 0 ? static_cast<double>(readoutRows) : rows(in[0]);
        f = 2 * r * dim(0, 1) * dim(1, 2);
      } else if (op == "softmax_attention") { // q, k [B, T, K], v [B, T, V]
        const double b = in[0].size() >= 3 ? numel(in[0]) / (dim(0, 2) * dim(0, 1)) : 1, t = dim(0, 2);
        f = 2 * b * t * t * dim(0, 1) + 2 * b * t * t * dim(2, 1) + 5 * b * t * t;
      } else if (op == "causal_conv") { // x [B, T, C], w [C, K]
        f = 2 * numel(y) * dim(1, 1) + (in.size() > 2 ? numel(y) : 0);
      } else if (op == "long_conv" || op == "shift_conv" || op == "diag_ssm") {
        f = causalLongConv(numel(in[0]) / static_cast<double>(T), T);
      } else if (op == "selective_scan") { // x [B, T, D], a [D, N]
        f = 7 * numel(in[0]) * dim(2, 1) + 2 * numel(in[0]);
      } else if (op == "delta_rule") { // q, k [B, T, K], v [B, T, V]
        f = 6 * rows(in[0]) * dim(0, 1) * dim(2, 1);
      } else if (op == "linear_attention") { // φq, φk [B, T, F], v [B, T, V]
        f = rows(in[0]) * (4 * dim(0, 1) * dim(2, 1) + 3 * dim(0, 1));
      } else if (op == "scan") { // the step's ops, T times (its values [B, ...])
        std::map<std::string, std::vector<int64_t>> step;
        for (const Input &a : n.bodyArgs)
          step[a.name] = concrete(a.shape, B, T);
        f = static_cast<double>(T) * count(n.body, step, false);
      } else if (kNorms.count(op) || op == "softmax") {
        f = 5 * numel(y);
      } else if (op == "sum") {
        f = in.empty() ? 0 : numel(in[0]);
      } else if (op == "taylor_map") {
        f = 2 * numel(y);
      } else { // per element
        f = numel(y);
      }
      if (record)
        out.byOp[op] += f;
      sum += f;
    }
    return sum;
  };
  out.total = count(g.nodes, shapes, true);
  return out;
}

} // namespace mixc::graph

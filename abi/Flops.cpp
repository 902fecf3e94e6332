//===- Flops.cpp - the floating-point work of a graph's forward pass --------===//
#include "abi/Flops.h"
#include "abi/OpRegistry.h"

#include <functional>

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
      if (n.op == "scan") { // the step's ops, T times (its values [B, ...])
        std::map<std::string, std::vector<int64_t>> step;
        for (const Input &a : n.bodyArgs)
          step[a.name] = concrete(a.shape, B, T);
        f = static_cast<double>(T) * count(n.body, step, false);
      } else if (const ops::OpSpec *spec = ops::findOp(n.op)) { // its formula in MixOps.td
        f = spec->flops(ops::OpShapes{std::move(in), std::move(y), T, readoutRows});
      }
      if (record)
        out.byOp[n.op] += f;
      sum += f;
    }
    return sum;
  };
  out.total = count(g.nodes, shapes, true);
  return out;
}

} // namespace mixc::graph

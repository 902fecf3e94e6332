//===- OpRegistry.cpp - the generated op table and its lookups --------------===//
#include "abi/OpRegistry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

namespace mixc::ops {

double OpShapes::product(const std::vector<int64_t> &s) {
  double n = 1;
  for (int64_t d : s)
    n *= static_cast<double>(d);
  return n;
}

double OpShapes::rows(size_t i) const {
  if (i >= in.size())
    return 0;
  return in[i].empty() ? 1 : product(in[i]) / static_cast<double>(in[i].back());
}

double OpShapes::dim(size_t i, size_t fromEnd) const {
  return i < in.size() && fromEnd >= 1 && in[i].size() >= fromEnd ? static_cast<double>(in[i][in[i].size() - fromEnd])
                                                                  : 0.0;
}

double causalLongConvFlops(double sequences, int64_t T) {
  const double t = static_cast<double>(T), n = 2 * t;
  const double rfft = 2.5 * n * std::log2(n); // a real FFT of size n: half a complex one's 5·n·log2 n
  return sequences * std::min(t * (t + 1), 3 * rfft + 6 * (n / 2 + 1));
}

#include "OpRegistry.inc"

size_t OpSpec::minOperands() const {
  return static_cast<size_t>(
      std::count_if(operands.begin(), operands.end(), [](const OperandSpec &o) { return !o.optional && !o.variadic; }));
}

size_t OpSpec::maxOperands() const {
  for (const OperandSpec &o : operands)
    if (o.variadic)
      return SIZE_MAX;
  return operands.size();
}

const AttrSpec *OpSpec::attr(std::string_view attrName) const {
  for (const AttrSpec &a : attrs)
    if (attrName == a.name)
      return &a;
  return nullptr;
}

const OpSpec *findOp(std::string_view name) {
  static const std::unordered_map<std::string_view, const OpSpec *> byName = [] {
    std::unordered_map<std::string_view, const OpSpec *> m;
    for (const OpSpec &op : allOps())
      m.emplace(op.name, &op);
    return m;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

double defaultNumber(std::string_view op, std::string_view attr) {
  const OpSpec *spec = findOp(op);
  const AttrSpec *a = spec ? spec->attr(attr) : nullptr;
  if (!a || !a->defaultValue)
    throw std::out_of_range("op '" + std::string(op) + "' has no default for attribute '" + std::string(attr) + "'");
  const std::string text = a->defaultValue;
  if (text == "false" || text == "true")
    return text == "true" ? 1 : 0;
  return std::strtod(text.c_str(), nullptr);
}

std::string describeOps(bool (*pred)(const OpSpec &)) {
  std::vector<std::string> names;
  for (const OpSpec &op : allOps())
    if (pred(op))
      names.push_back(op.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

} // namespace mixc::ops

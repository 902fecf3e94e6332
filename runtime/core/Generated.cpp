//===- Generated.cpp - fused regions as autograd functions ------------------===//
#include "runtime/core/Generated.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <map>

namespace mixc::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The run-time sizes shared by the region's row values ([B, T] mostly).
std::vector<int64_t> rowDims(const BoundRegion &k, const std::vector<at::Tensor> &in) {
  const int rank = k.region->rowRank;
  for (size_t i = 0; i < in.size(); ++i)
    if (k.inputIsRow[i]) {
      TORCH_CHECK(in[i].dim() >= rank, "region ", k.region->name, ": input ", k.region->inputs[i],
                  " has rank ", in[i].dim());
      return std::vector<int64_t>(in[i].sizes().begin(), in[i].sizes().begin() + rank);
    }
  TORCH_CHECK(false, "region ", k.region->name, " has no per-row input");
}

std::vector<int64_t> concreteShape(const std::vector<int64_t> &shape, const std::vector<int64_t> &dims) {
  std::vector<int64_t> s = shape;
  for (size_t i = 0, d = 0; i < s.size(); ++i)
    if (s[i] == graph::kDynamic)
      s[i] = dims.at(d++);
  return s;
}

mixk_args argsFor(const std::vector<int64_t> &dims) {
  mixk_args a{};
  for (size_t i = 0; i < dims.size(); ++i)
    a.dims[i] = dims[i];
  a.ndims = static_cast<int32_t>(dims.size());
  a.threads = at::get_num_threads();
  return a;
}

std::vector<const float *> pointers(const std::vector<at::Tensor> &ts) {
  std::vector<const float *> p;
  for (const at::Tensor &t : ts)
    p.push_back(t.data_ptr<float>());
  return p;
}
std::vector<float *> mutablePointers(std::vector<at::Tensor> &ts) {
  std::vector<float *> p;
  for (at::Tensor &t : ts)
    p.push_back(t.data_ptr<float>());
  return p;
}

std::vector<at::Tensor> contiguousF32(const BoundRegion &k, const std::vector<at::Tensor> &in,
                                      const std::vector<int64_t> &dims) {
  std::vector<at::Tensor> out;
  const bool cuda = k.target == kernels::Target::Cuda;
  for (size_t i = 0; i < in.size(); ++i) {
    TORCH_CHECK(in[i].is_cuda() == cuda && (cuda || in[i].is_cpu()), "region ", k.region->name,
                ": input ", k.region->inputs[i], " is on ", in[i].device(), " but its kernel is for the ",
                kernels::targetName(k.target));
    TORCH_CHECK(!cuda || in[i].device() == in[0].device(), "region ", k.region->name,
                ": inputs on two devices");
    TORCH_CHECK(in[i].scalar_type() == at::kFloat, "region ", k.region->name, ": input ",
                k.region->inputs[i], " is not f32");
    if (k.inputIsRow[i])
      TORCH_CHECK(in[i].sizes().slice(0, dims.size()).vec() == dims, "region ", k.region->name,
                  ": input ", k.region->inputs[i], " has sizes ", in[i].sizes(),
                  ", not leading with ", at::IntArrayRef(dims));
    if (k.inputIsFilter[i])
      TORCH_CHECK(in[i].size(0) >= dims.back(), "long_conv: filter has ", in[i].size(0),
                  " taps but the sequence has ", dims.back(), " steps");
    out.push_back(in[i].contiguous());
  }
  return out;
}

/// The region's forward on contiguous inputs: its outputs and `saved`.
std::vector<at::Tensor> forwardCall(const BoundRegion &k, const std::vector<at::Tensor> &in,
                                    const std::vector<int64_t> &dims, at::Tensor &saved,
                                    const mixk_state *state) {
  const at::TensorOptions f32 = in[0].options().dtype(at::kFloat); // on the inputs' device
  std::vector<at::Tensor> out;
  for (const auto &shape : k.outputShapes)
    out.push_back(at::empty(concreteShape(shape, dims), f32));
  saved = at::empty({k.fns.saved(dims.data())}, f32);
  std::vector<const float *> inP = pointers(in);
  std::vector<float *> outP = mutablePointers(out);
  mixk_args a = argsFor(dims);
  a.in = inP.data();
  a.out = outP.data();
  a.saved = saved.data_ptr<float>();
  a.state = state;
  k.fns.forward(&a);
  return out;
}

struct RegionFunction : public torch::autograd::Function<RegionFunction> {
  static variable_list forward(AutogradContext *ctx, const BoundRegion *k, at::TensorList list) {
    std::vector<at::Tensor> inputs = list.vec();
    std::vector<int64_t> dims = rowDims(*k, inputs);
    std::vector<at::Tensor> in = contiguousF32(*k, inputs, dims);
    at::Tensor saved;
    std::vector<at::Tensor> out = forwardCall(*k, in, dims, saved, nullptr);
    ctx->save_for_backward(in);
    ctx->saved_data["kernel"] = reinterpret_cast<int64_t>(k);
    ctx->saved_data["saved"] = saved;
    ctx->saved_data["dims"] = dims;
    return out;
  }

  static variable_list backward(AutogradContext *ctx, variable_list gouts) {
    const auto *k = reinterpret_cast<const BoundRegion *>(ctx->saved_data["kernel"].toInt());
    std::vector<at::Tensor> in = ctx->get_saved_variables();
    at::Tensor saved = ctx->saved_data["saved"].toTensor();
    std::vector<int64_t> dims = ctx->saved_data["dims"].toIntVector();
    std::vector<at::Tensor> gout;
    for (size_t i = 0; i < gouts.size(); ++i)
      gout.push_back(gouts[i].defined()
                         ? gouts[i].to(at::kFloat).contiguous()
                         : at::zeros(concreteShape(k->outputShapes[i], dims), saved.options()));
    std::vector<at::Tensor> gin;
    for (const at::Tensor &t : in)
      gin.push_back(at::zeros_like(t));
    std::vector<const float *> inP = pointers(in), goutP = pointers(gout);
    std::vector<float *> ginP = mutablePointers(gin);
    mixk_args a = argsFor(dims);
    a.in = inP.data();
    a.saved = saved.data_ptr<float>();
    a.gout = goutP.data();
    a.gin = ginP.data();
    k->fns.backward(&a);
    variable_list grads{at::Tensor()}; // the BoundRegion pointer
    grads.insert(grads.end(), gin.begin(), gin.end());
    return grads;
  }
};

/// Row values lead with exactly `rank` run-time dims; invariants have none.
std::string rowKind(const std::vector<int64_t> &shape, int rank, bool &row) {
  int dynamic = 0;
  for (int64_t d : shape)
    dynamic += d == graph::kDynamic;
  row = dynamic > 0;
  if (dynamic == 0)
    return "";
  if (dynamic != rank || static_cast<int>(shape.size()) < rank)
    return "has " + std::to_string(dynamic) + " run-time dims, not " + std::to_string(rank);
  for (int i = 0; i < rank; ++i)
    if (shape[i] != graph::kDynamic)
      return "does not lead with its run-time dims";
  return "";
}
} // namespace

std::string bindRegion(const graph::Graph &g, const graph::Region &region,
                       const kernels::Library &library, BoundRegion &bound) {
  const graph::RegionTarget target = region.target(kernels::targetKey(library.target()));
  if (target.kernel.empty())
    return target.skipped.empty() ? "no kernel" : target.skipped;
  if (region.rowRank < 1 || region.rowRank > 4)
    return "row rank " + std::to_string(region.rowRank) + " is outside 1..4";
  if (region.inputRoles.size() != region.inputs.size())
    return "the graph records no input roles for the region (recompile the model)";
  bound = BoundRegion{};
  bound.region = &region;
  bound.target = library.target();
  if (!library.lookup(target.kernel, bound.fns))
    return "the kernel library lacks " + target.kernel + "_forward/_backward/_saved";
  auto shapes = graph::valueShapes(g);
  bool anyRow = false;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const std::string &v = region.inputs[i], &role = region.inputRoles[i];
    auto it = shapes.find(v);
    if (it == shapes.end())
      return "input '" + v + "' is not a value of the graph";
    if (g.inputs.size() && v == g.inputs[0].name)
      return "input '" + v + "' is the token ids";
    // The role comes from the compiler's plan; the shape must agree with it.
    const std::vector<int64_t> &shape = it->second;
    const bool filter = role == graph::kRoleFilter;
    bool row = false;
    if (filter) {
      if (region.rowRank != 2 || shape.size() != 2 || shape[0] != graph::kDynamic || shape[1] == graph::kDynamic)
        return "input '" + v + "' is a filter but not [L, C] under [B, T] rows";
    } else if (std::string e = rowKind(shape, region.rowRank, row); !e.empty()) {
      return "input '" + v + "' " + e;
    } else if (row != (role == graph::kRoleRow)) {
      return "input '" + v + "' has the role " + role + " but its shape says otherwise";
    }
    bound.inputIsRow.push_back(row);
    bound.inputIsFilter.push_back(filter);
    anyRow |= row;
  }
  if (!anyRow)
    return "no input has run-time dims";
  for (const std::string &v : region.outputs) {
    auto it = shapes.find(v);
    if (it == shapes.end())
      return "output '" + v + "' is not a value of the graph";
    bool row = false;
    if (std::string e = rowKind(it->second, region.rowRank, row); !e.empty())
      return "output '" + v + "' " + e;
    bound.outputIsRow.push_back(row);
    bound.outputShapes.push_back(it->second);
  }
  return "";
}

std::vector<at::Tensor> runRegion(const BoundRegion &region, const std::vector<at::Tensor> &inputs) {
  // As a TensorList, so autograd sees each tensor as an input (a vector
  // would be taken for one opaque argument).
  return RegionFunction::apply(&region, at::TensorList(inputs));
}

std::vector<at::Tensor> runRegion(const BoundRegion &region, const std::vector<at::Tensor> &inputs,
                                  const StateAccess &access) {
  if (!access.capture.defined() && !access.editPos.defined())
    return runRegion(region, inputs);
  TORCH_CHECK(!at::GradMode::is_enabled(), "region ", region.region->name,
              ": state interventions run without gradients");
  std::vector<int64_t> dims = rowDims(region, inputs);
  std::vector<at::Tensor> in = contiguousF32(region, inputs, dims);
  const at::Device device = in[0].device();
  auto onDevice = [&](const at::Tensor &t, at::ScalarType type) {
    return t.defined() ? t.to(device, type).contiguous() : t;
  };
  // Kept alive until the call returns; the kernel writes the capture in place.
  at::Tensor capture = onDevice(access.capture, at::kFloat), pos = onDevice(access.editPos, at::kLong),
             value = onDevice(access.editValue, at::kFloat), add = onDevice(access.editAdd, at::kInt);
  mixk_state state{};
  state.capture = capture.defined() ? capture.data_ptr<float>() : nullptr;
  if (pos.defined()) {
    TORCH_CHECK(value.defined() && add.defined(), "region ", region.region->name, ": a state edit without values");
    state.edit_pos = pos.data_ptr<int64_t>();
    state.edit_value = value.data_ptr<float>();
    state.edit_add = add.data_ptr<int32_t>();
  }
  at::Tensor range = onDevice(access.editRange, at::kLong), reader = onDevice(access.editReader, at::kInt);
  state.edit_range = range.defined() ? range.data_ptr<int64_t>() : nullptr;
  state.edit_reader = reader.defined() ? reader.data_ptr<int32_t>() : nullptr;
  at::Tensor saved;
  std::vector<at::Tensor> out = forwardCall(region, in, dims, saved, &state);
  if (access.capture.defined() && !capture.is_same(access.capture))
    access.capture.copy_(capture);
  return out;
}

} // namespace mixc::rt

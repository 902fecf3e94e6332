// A packed model (runtime/core/Replicas.h) against its members run alone:
// K replicas, each initialised from its own seed, give each member's logits
// and each member's gradients; the replica AdamW (FusedAdamW.h) steps each
// replica as fusedAdamWStep steps its model alone; a few training steps of
// the pack follow K separate runs; graphs that cannot be packed are refused,
// naming the node.
#include "CompileStdlib.h"
#include "runtime/core/Model.h"
#include "runtime/core/Replicas.h"
#include "runtime/core/TorchCompat.h"
#include "runtime/kernels/KernelBuild.h"
#include "runtime/train/FusedAdamW.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

using mixc::rt::Model;
using mixc::rt::ReplicatedModel;

namespace {
// Every stdlib model, the two hybrids (recurrent layer first) too.
const char *kArchitectures[] = {"attention", "baseconv", "based",  "mamba",          "deltanet",
                                "h3",        "hyena",    "gla",    "gated_deltanet", "retnet",
                                "mamba_attention", "gated_deltanet_attention"};
constexpr int64_t kReplicas = 3;
const std::vector<uint64_t> kSeeds = {3, 11, 4};

double maxRelDiff(const at::Tensor &a, const at::Tensor &b) {
  return (a - b).abs().max().item<double>() / std::max(1e-6, b.abs().max().item<double>());
}

struct Pack {
  std::unique_ptr<ReplicatedModel> packed;
  std::vector<std::unique_ptr<Model>> alone; // member k, initialised from kSeeds[k]
};

enum class Kernels { None, Cpu, CudaOnHost };

/// With kernels, the pack and its members run the model's generated kernels
/// (both through the same library): the CPU ones, or the CUDA source
/// compiled for the host (MIXK_CUDA_ON_HOST, as GeneratedTest does).
Pack makePack(const std::string &arch, std::vector<mixc::dsl::ConfigEntry> config, Kernels kernels = Kernels::None) {
  mix::CompileResult result = compileStdlib(arch, config);
  Pack p;
  std::string error;
  std::shared_ptr<const mixc::kernels::Library> library;
  if (kernels != Kernels::None) {
    setenv("MIXC_KERNEL_CACHE", MIXC_TEST_KERNEL_CACHE, /*overwrite=*/0);
    library = mixc::kernels::buildLibrary(
        kernels == Kernels::Cpu ? result.cpuKernels : "#define MIXK_CUDA_ON_HOST\n" + result.cudaKernels, error);
    EXPECT_TRUE(library) << error;
    if (!library)
      return p;
  }
  p.packed = ReplicatedModel::create(result.graph, kReplicas, error, library);
  EXPECT_TRUE(p.packed) << error;
  if (!p.packed)
    return p;
  p.packed->initParameters(kSeeds);
  for (uint64_t seed : kSeeds) {
    p.alone.push_back(Model::create(result.graph, error, library));
    p.alone.back()->initParameters(seed);
  }
  return p;
}

class Replicas : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    at::set_num_threads(1);
    pack = makePack(GetParam(), {{"d", "16"}, {"vocab", "20"}});
    ASSERT_TRUE(pack.packed);
  }
  Pack pack;
};

/// The logits, at every step and at a readout, and every parameter's
/// gradient of each replica of `pack` against its member alone.
void expectEachReplicaIsItsMember(Pack &pack) {
  torch::manual_seed(5);
  const at::Tensor tokens = at::randint(3, 20, {2, 12}, at::kLong);
  const at::Tensor readout = at::tensor({11, 6}, at::kLong);
  at::Tensor packed = pack.packed->forward(tokens);                // [K, B, T, V]
  at::Tensor packedAt = pack.packed->forward(tokens, readout);     // [K, B, V]
  ASSERT_EQ(packed.sizes(), (at::IntArrayRef{kReplicas, 2, 12, 20}));
  ASSERT_EQ(packedAt.sizes(), (at::IntArrayRef{kReplicas, 2, 20}));
  // The loss of the pack: each replica's own loss, summed.
  at::Tensor loss = packed.pow(2).mean({1, 2, 3}).sum();
  loss.backward();
  for (int64_t k = 0; k < kReplicas; ++k) {
    Model &alone = *pack.alone[k];
    at::Tensor logits = alone.forward(tokens);
    EXPECT_LT(maxRelDiff(packed[k].detach(), logits.detach()), 1e-5) << "replica " << k;
    Model::Options o;
    o.readout = readout;
    EXPECT_LT(maxRelDiff(packedAt[k].detach(), alone.forward(tokens, o).squeeze(1).detach()), 1e-5);
    logits.pow(2).mean().backward();
    for (size_t i = 0; i < alone.tensors().size(); ++i) {
      const auto &[name, t] = alone.tensors()[i];
      if (!alone.graph().params[i].trainable)
        continue;
      const at::Tensor &packedGrad = pack.packed->tensors()[i].second.grad();
      ASSERT_TRUE(packedGrad.defined()) << name;
      ASSERT_TRUE(t.grad().defined()) << name;
      EXPECT_LT(maxRelDiff(packedGrad[k], t.grad()), 2e-4) << name << " of replica " << k;
    }
  }
}
} // namespace

TEST_P(Replicas, EachReplicaIsItsMemberAlone) { expectEachReplicaIsItsMember(pack); }

// On the generated kernels, CPU and CUDA (on the host): the regions with a
// kernel run generated in the pack as in each member (once a replica where
// they read weights, once for all where they read rows alone), with the same
// logits and gradients.
TEST_P(Replicas, GeneratedRegionsGiveEachMembersResults) {
  at::set_num_threads(1);
  for (Kernels kernels : {Kernels::Cpu, Kernels::CudaOnHost}) {
    SCOPED_TRACE(kernels == Kernels::Cpu ? "CPU kernels" : "CUDA kernels on the host");
    Pack generated = makePack(GetParam(), {{"d", "16"}, {"vocab", "20"}}, kernels);
    ASSERT_TRUE(generated.packed);
    int bound = 0;
    for (const auto &[name, why] : generated.packed->regionStatus())
      bound += why.empty();
    EXPECT_GT(bound, 0) << "no region of the pack runs generated";
    EXPECT_EQ(generated.packed->regionStatus(), generated.alone[0]->regionStatus());
    expectEachReplicaIsItsMember(generated);
  }
}

TEST_P(Replicas, TrainingStepsFollowSeparateRuns) {
  // Three replicas at three learning rates, 12 AdamW steps on the same
  // batches: each replica's loss is its member's, trained alone.
  const std::vector<double> lrs = {1e-3, 3e-3, 1e-2};
  mixc::train::ReplicaAdamW packedOpt(pack.packed->trainable(), kReplicas);
  std::vector<torch::optim::AdamW> aloneOpt;
  for (int64_t k = 0; k < kReplicas; ++k)
    aloneOpt.emplace_back(pack.alone[k]->trainable(),
                          torch::optim::AdamWOptions(lrs[k]).betas({0.9, 0.999}).eps(1e-8).weight_decay(0.0));
  torch::manual_seed(9);
  for (int step = 0; step < 12; ++step) {
    const at::Tensor tokens = at::randint(3, 20, {4, 10}, at::kLong);
    const at::Tensor readout = at::randint(0, 10, {4}, at::kLong);
    const at::Tensor target = at::randint(3, 20, {4}, at::kLong);
    at::Tensor logits = pack.packed->forward(tokens, readout); // [K, B, V]
    at::Tensor loss = at::zeros({});
    std::vector<double> packedLoss;
    for (int64_t k = 0; k < kReplicas; ++k) {
      at::Tensor l = at::cross_entropy_loss(logits[k], target);
      packedLoss.push_back(l.item<double>());
      loss = loss + l;
    }
    packedOpt.zeroGrad();
    loss.backward();
    packedOpt.step(lrs, {0, 0, 0}, {true, true, true});
    for (int64_t k = 0; k < kReplicas; ++k) {
      Model::Options o;
      o.readout = readout;
      at::Tensor l = at::cross_entropy_loss(pack.alone[k]->forward(tokens, o).squeeze(1), target);
      EXPECT_NEAR(packedLoss[k], l.item<double>(), 1e-4 * std::max(1.0, std::abs(l.item<double>())))
          << "replica " << k << " at step " << step;
      aloneOpt[k].zero_grad();
      l.backward();
      mixc::train::fusedAdamWStep(aloneOpt[k]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stdlib, Replicas, ::testing::ValuesIn(kArchitectures));

TEST(ReplicasExtra, PositionalTableIsPerReplica) {
  // attention with learned positions: time_slice of a weight reads the
  // tokens' length only, so its result is per replica, not rows.
  at::set_num_threads(1);
  Pack pack = makePack("attention", {{"d", "16"}, {"vocab", "20"}, {"pos_emb", "true"}});
  ASSERT_TRUE(pack.packed);
  const at::Tensor tokens = at::randint(3, 20, {2, 9}, at::kLong);
  torch::NoGradGuard noGrad;
  at::Tensor packed = pack.packed->forward(tokens);
  for (int64_t k = 0; k < kReplicas; ++k)
    EXPECT_LT(maxRelDiff(packed[k], pack.alone[k]->forward(tokens)), 1e-5) << "replica " << k;
}

TEST(ReplicasExtra, ReplicaAdamWIsFusedAdamWPerReplica) {
  // Same gradients: bit-equal weights and moments (the same loop, factors
  // and order); a replica not active keeps its weights.
  torch::manual_seed(1);
  const std::vector<int64_t> shape = {kReplicas, 5, 3};
  at::Tensor packed = at::randn(shape).requires_grad_(true);
  std::vector<at::Tensor> alone;
  std::vector<torch::optim::AdamW> opts;
  const std::vector<double> lrs = {1e-3, 5e-3, 2e-2}, wds = {0.0, 0.1, 0.01};
  for (int64_t k = 0; k < kReplicas; ++k) {
    alone.push_back(packed[k].detach().clone().requires_grad_(true));
    opts.emplace_back(std::vector<at::Tensor>{alone.back()},
                      torch::optim::AdamWOptions(lrs[k]).betas({0.9, 0.999}).eps(1e-8).weight_decay(wds[k]));
  }
  mixc::train::ReplicaAdamW opt({packed}, kReplicas);
  for (int step = 0; step < 5; ++step) {
    at::Tensor g = at::randn(shape);
    packed.mutable_grad() = g.clone();
    const std::vector<bool> active = {true, step < 3, true}; // replica 1 stops after 3 steps
    opt.step(lrs, wds, active);
    for (int64_t k = 0; k < kReplicas; ++k) {
      if (!active[k])
        continue;
      alone[k].mutable_grad() = g[k].clone();
      mixc::train::fusedAdamWStep(opts[k]);
    }
  }
  for (int64_t k = 0; k < kReplicas; ++k)
    EXPECT_TRUE(at::equal(packed[k].detach(), alone[k].detach())) << "replica " << k;
  EXPECT_EQ(opt.stepsOf(1), 3);
  // Replica 2's state exported as its checkpoint's optimiser is the one its run alone keeps.
  at::Tensor member = alone[2].detach().clone().requires_grad_(true);
  torch::optim::AdamW exported(std::vector<at::Tensor>{member}, torch::optim::AdamWOptions(lrs[2]));
  opt.exportReplica(2, {member}, exported);
  auto &mine = static_cast<torch::optim::AdamWParamState &>(
      *exported.state().at(mixc::compat::optimizerStateKey(member)));
  auto &theirs = static_cast<torch::optim::AdamWParamState &>(
      *opts[2].state().at(mixc::compat::optimizerStateKey(alone[2])));
  EXPECT_EQ(mine.step(), theirs.step());
  EXPECT_TRUE(at::equal(mine.exp_avg(), theirs.exp_avg()));
  EXPECT_TRUE(at::equal(mine.exp_avg_sq(), theirs.exp_avg_sq()));
}

TEST(ReplicasExtra, ReplicaAdamWTensorOpsFollowTheLoop) {
  // The update a GPU pack runs (tensor ops over all replicas) against the
  // CPU loop on the same gradients: weights to float rounding, with one
  // replica stopped midway (left exactly as it was) and one that starts late
  // (its step count, not the pack's, in the bias correction).
  torch::manual_seed(2);
  const std::vector<int64_t> shape = {kReplicas, 4, 7};
  at::Tensor loopW = at::randn(shape).requires_grad_(true);
  at::Tensor opsW = loopW.detach().clone().requires_grad_(true);
  const at::Tensor initial = loopW.detach().clone();
  mixc::train::ReplicaAdamW loop({loopW}, kReplicas), ops({opsW}, kReplicas);
  const std::vector<double> lrs = {1e-3, 5e-3, 2e-2}, wds = {0.0, 0.1, 0.01};
  at::Tensor frozen;
  for (int step = 0; step < 8; ++step) {
    at::Tensor g = at::randn(shape);
    loopW.mutable_grad() = g.clone();
    opsW.mutable_grad() = g.clone();
    const std::vector<bool> active = {true, step < 4, step >= 2};
    if (step == 4)
      frozen = opsW[1].detach().clone();
    loop.step(lrs, wds, active);
    ops.stepWithTensorOps(lrs, wds, active);
  }
  for (int64_t k = 0; k < kReplicas; ++k) {
    EXPECT_EQ(ops.stepsOf(k), loop.stepsOf(k));
    const double err = (opsW[k] - loopW[k]).abs().max().item<double>();
    EXPECT_LT(err, 1e-6) << "replica " << k;
    // Each replica moved (the comparison is not of two unchanged tensors).
    EXPECT_GT((opsW[k] - initial[k]).abs().max().item<double>(), 1e-3) << "replica " << k;
  }
  EXPECT_TRUE(at::equal(opsW[1].detach(), frozen)) << "a replica not active changed";
}

TEST(ReplicasExtra, RefusesWhatCannotBePacked) {
  mix::CompileResult result = compileStdlib("attention", {{"d", "16"}, {"vocab", "20"}});
  std::string error;
  EXPECT_FALSE(ReplicatedModel::create(result.graph, 0, error));
  EXPECT_NE(error.find("at least one replica"), std::string::npos) << error;
  // A reshape that takes in the batch dimension would mix replicas' rows
  // (H3's heads are a reshape of rows).
  mixc::graph::Graph g = compileStdlib("h3", {{"d", "16"}, {"vocab", "20"}}).graph;
  bool edited = false;
  for (mixc::graph::Node &n : g.nodes)
    if (n.op == "reshape" && !edited) {
      n.attrs["keep"].i = 0;
      edited = true;
      error.clear();
      EXPECT_FALSE(ReplicatedModel::create(g, 2, error));
      EXPECT_NE(error.find("'" + n.name + "'"), std::string::npos) << error;
      EXPECT_NE(error.find("cannot be packed"), std::string::npos) << error;
    }
  EXPECT_TRUE(edited) << "h3 has no reshape to edit";
}

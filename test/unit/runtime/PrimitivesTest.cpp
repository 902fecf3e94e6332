// Every primitive against a naive reference written plainly here (explicit
// loops, double precision), and its gradients against central finite
// differences.
#include "runtime/core/HostIsa.h"
#include "runtime/core/Primitives.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <complex>
#include <functional>

using namespace mixc::rt;
using at::Tensor;

namespace {
at::TensorOptions f64() { return at::TensorOptions().dtype(at::kDouble); }
Tensor rnd(at::IntArrayRef shape, double scale = 1.0) { return at::randn(shape, f64()) * scale; }

double maxDiff(const Tensor &a, const Tensor &b) {
  return (a - b).abs().max().item<double>();
}

/// Analytic (autograd) vs central-difference gradients of sum(f(x)·g) for a
/// random cotangent g, for every element of every input.
void checkGradients(const std::function<Tensor(const std::vector<Tensor> &)> &f,
                    std::vector<Tensor> inputs, double tol = 1e-6) {
  for (Tensor &t : inputs)
    t = t.detach().clone().set_requires_grad(true);
  Tensor out = f(inputs);
  Tensor g = at::randn_like(out);
  auto grads = torch::autograd::grad({(out * g).sum()}, inputs, {}, false, false, true);
  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor x = inputs[i].detach();
    Tensor flat = x.view({-1});
    Tensor numeric = at::zeros_like(flat);
    for (int64_t j = 0; j < flat.numel(); ++j) {
      double orig = flat[j].item<double>();
      std::vector<Tensor> args;
      for (const Tensor &t : inputs)
        args.push_back(t.detach());
      flat[j] = orig + h;
      double up = (f(args) * g).sum().item<double>();
      flat[j] = orig - h;
      double down = (f(args) * g).sum().item<double>();
      flat[j] = orig;
      numeric[j] = (up - down) / (2 * h);
    }
    ASSERT_TRUE(grads[i].defined()) << "no gradient for input " << i;
    double err = maxDiff(grads[i].reshape({-1}), numeric);
    double scale = std::max(1.0, numeric.abs().max().item<double>());
    EXPECT_LT(err / scale, tol) << "input " << i;
  }
}

class Primitives : public ::testing::Test {
protected:
  void SetUp() override { at::manual_seed(7); }
};

/// The host sweeps with an AVX2 + FMA copy (HostIsa.h), each test run with
/// that copy (where the CPU has it) and with the baseline one. Sizes cover a
/// vector body and a remainder at both widths.
class HostSweeps : public Primitives, public ::testing::WithParamInterface<bool> {
protected:
  void SetUp() override {
    Primitives::SetUp();
    setHostAvx2Fma(GetParam());
  }
  void TearDown() override { setHostAvx2Fma(true); }
};
INSTANTIATE_TEST_SUITE_P(Isa, HostSweeps, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Avx2FmaWherePresent" : "Baseline";
                         });
} // namespace

TEST_F(Primitives, CausalConv) {
  int B = 2, T = 6, C = 3, K = 4;
  Tensor x = rnd({B, T, C}), w = rnd({C, K}), b = rnd({C});
  Tensor ref = at::zeros({B, T, C}, f64());
  auto X = x.accessor<double, 3>();
  auto W = w.accessor<double, 2>();
  auto Bb = b.accessor<double, 1>();
  auto R = ref.accessor<double, 3>();
  for (int i = 0; i < B; ++i)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        double acc = Bb[c];
        for (int j = 0; j < K; ++j)
          if (t - K + 1 + j >= 0)
            acc += W[c][j] * X[i][t - K + 1 + j][c];
        R[i][t][c] = acc;
      }
  EXPECT_LT(maxDiff(causalConv(x, w, b), ref), 1e-12);
  checkGradients([](const std::vector<Tensor> &a) { return causalConv(a[0], a[1], a[2]); }, {x, w, b});
}

TEST_P(HostSweeps, LongConv) {
  int B = 2, T = 5, C = 11, L = 8;
  Tensor x = rnd({B, T, C}), h = rnd({L, C});
  Tensor ref = at::zeros({B, T, C}, f64());
  auto X = x.accessor<double, 3>();
  auto H = h.accessor<double, 2>();
  auto R = ref.accessor<double, 3>();
  for (int i = 0; i < B; ++i)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c)
        for (int s = 0; s <= t; ++s)
          R[i][t][c] += H[s][c] * X[i][t - s][c];
  // Both forms against the naive sum, with gradients; longConv picks one.
  EXPECT_LT(maxDiff(longConv(x, h), ref), 1e-10);
  EXPECT_LT(maxDiff(longConvDirect(x, h), ref), 1e-10);
  EXPECT_LT(maxDiff(longConvFFT(x, h), ref), 1e-10);
  checkGradients([](const std::vector<Tensor> &a) { return longConvDirect(a[0], a[1]); }, {x, h});
  checkGradients([](const std::vector<Tensor> &a) { return longConvFFT(a[0], a[1]); }, {x, h});
  // Past the crossover both still agree (float, batch of 2, T = crossover + 3).
  int64_t Tl = kDirectLongConvMaxT + 3;
  Tensor xl = at::randn({2, Tl, 4}), hl = at::randn({Tl + 2, 4});
  Tensor direct = longConvDirect(xl, hl), fft = longConvFFT(xl, hl);
  EXPECT_LT(maxDiff(direct, fft), 1e-4 * std::max(1.0, fft.abs().max().item<double>()));
  EXPECT_LT(maxDiff(longConv(xl, hl), fft), 1e-4 * std::max(1.0, fft.abs().max().item<double>()));
}

TEST_P(HostSweeps, ShiftKernelIsLinearCrossCorrelation) {
  // Linear, as zoology's FFTs of size 2N compute it: c does not wrap around
  // (a circular correlation, FFT size N, differs once b leaves e₁). T > N
  // checks the zero taps past N.
  int C = 3, N = 13;
  Tensor b = rnd({C, N}), c = rnd({C, N});
  for (int T : {4, 11, 13, 17}) {
    SCOPED_TRACE("T = " + std::to_string(T));
    Tensor ref = at::zeros({T, C}, f64());
    auto Bb = b.accessor<double, 2>(), Cc = c.accessor<double, 2>();
    auto R = ref.accessor<double, 2>();
    for (int ch = 0; ch < C; ++ch)
      for (int l = 0; l < std::min(T, N); ++l)
        for (int m = 0; m + l < N; ++m)
          R[l][ch] += Bb[ch][m] * Cc[ch][m + l];
    // The fast form (a depthwise correlation of the taps used) and the plain
    // reference (zoology's FFTs) both.
    for (bool plain : {false, true}) {
      setPlainReferences(plain);
      EXPECT_LT(maxDiff(shiftKernel(b, c, T), ref), 1e-10) << (plain ? "FFT form" : "direct form");
      checkGradients([T](const std::vector<Tensor> &a) { return shiftKernel(a[0], a[1], T); }, {b, c});
    }
    setPlainReferences(false);
  }
  int T = 4;
  // With B = e₁ the kernel is C itself (protocol §3.5).
  Tensor e1 = at::zeros({C, N}, f64());
  e1.select(1, 0).fill_(1.0);
  EXPECT_LT(maxDiff(shiftKernel(e1, c, T), c.slice(1, 0, T).t()), 1e-10);
  checkGradients([T](const std::vector<Tensor> &a) { return shiftKernel(a[0], a[1], T); }, {b, c});
}

/// The S4D kernel by its definition (protocol §3.5), with std::pow.
Tensor s4dReference(const Tensor &logDt, const Tensor &logAReal, const Tensor &aImag, const Tensor &b,
                    const Tensor &c, int T) {
  int64_t H = logAReal.size(0), N = logAReal.size(1);
  Tensor ref = at::zeros({T, H}, f64());
  auto R = ref.accessor<double, 2>();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t n = 0; n < N; ++n) {
      std::complex<double> A(-std::exp(logAReal[h][n].item<double>()), aImag[h][n].item<double>());
      double dt = std::exp(logDt[h].item<double>());
      std::complex<double> dA = (1.0 + dt * A / 2.0) / (1.0 - dt * A / 2.0);
      std::complex<double> Cn(c[h][n][0].item<double>(), c[h][n][1].item<double>());
      std::complex<double> Bn(b[h][n][0].item<double>(), b[h][n][1].item<double>());
      std::complex<double> Ct = Cn * Bn * dt / (1.0 - dt * A / 2.0);
      for (int l = 0; l < T; ++l)
        R[l][h] += 2.0 * std::real(Ct * std::pow(dA, l));
    }
  return ref;
}

TEST_P(HostSweeps, S4dKernelOverLongSequences) {
  // Running powers must not drift over a long T, with modes near |dA| = 1
  // as S4D's are (head 1: Re A ≈ −3e-4); float tensors are summed in double.
  int H = 2, N = 3;
  Tensor logDt = rnd({H}, 0.3) - 2.0, logAReal = rnd({H, N}, 0.2), aImag = rnd({H, N}),
         b = rnd({H, N, 2}), c = rnd({H, N, 2});
  logAReal.select(0, 1).fill_(-8.0);
  for (int T : {1, 7, 300}) {
    SCOPED_TRACE("T = " + std::to_string(T));
    Tensor ref = s4dReference(logDt, logAReal, aImag, b, c, T);
    EXPECT_LT(maxDiff(s4dKernel(logDt, logAReal, aImag, b, c, T), ref),
              1e-9 * std::max(1.0, ref.abs().max().item<double>()));
  }
  checkGradients([](const std::vector<Tensor> &a) { return s4dKernel(a[0], a[1], a[2], a[3], a[4], 9); },
                 {logDt, logAReal, aImag, b, c});
  auto f32 = [](const Tensor &t) { return t.to(at::kFloat); };
  auto f64r = [](const Tensor &t) { return t.to(at::kFloat).to(at::kDouble); };
  Tensor k32 = s4dKernel(f32(logDt), f32(logAReal), f32(aImag), f32(b), f32(c), 300).to(at::kDouble);
  Tensor k64 = s4dKernel(f64r(logDt), f64r(logAReal), f64r(aImag), f64r(b), f64r(c), 300);
  EXPECT_LT(maxDiff(k32, k64), 1e-5 * std::max(1.0, k64.abs().max().item<double>()));
}

TEST_P(HostSweeps, DiagSSMKernel) {
  // N = 11 modes: one full block of the host sweep's 8 partial sums and a
  // padded one.
  int H = 2, N = 11, T = 5;
  Tensor logDt = rnd({H}, 0.3) - 2.0, logAReal = rnd({H, N}, 0.2), aImag = rnd({H, N}),
         b = rnd({H, N, 2}), c = rnd({H, N, 2});
  Tensor ref = s4dReference(logDt, logAReal, aImag, b, c, T);
  EXPECT_LT(maxDiff(diagSSMKernel(logDt, logAReal, aImag, b, c, T), ref), 1e-10);
  checkGradients([T](const std::vector<Tensor> &a) { return diagSSMKernel(a[0], a[1], a[2], a[3], a[4], T); },
                 {logDt, logAReal, aImag, b, c});
  // The plain tensor-op form (exp(l·log dA), setPlainReferences) agrees.
  setPlainReferences(true);
  Tensor plain = diagSSMKernel(logDt, logAReal, aImag, b, c, T);
  setPlainReferences(false);
  EXPECT_LT(maxDiff(plain, ref), 1e-10);
  // The per-head kernel convolves each of the head's channels.
  Tensor x = rnd({2, T, H, 2});
  Tensor y = diagSSM(x, logDt, logAReal, aImag, b, c);
  Tensor k = diagSSMKernel(logDt, logAReal, aImag, b, c, T);
  Tensor expect = longConv(x.select(3, 1), k);
  EXPECT_LT(maxDiff(y.select(3, 1), expect), 1e-10);
}

TEST_F(Primitives, SoftmaxAttention) {
  int B = 2, T = 5, K = 3, V = 4;
  Tensor q = rnd({B, T, K}), k = rnd({B, T, K}), v = rnd({B, T, V});
  Tensor ref = at::zeros({B, T, V}, f64());
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < T; ++i) {
      std::vector<double> s(i + 1);
      double mx = -1e300, z = 0;
      for (int j = 0; j <= i; ++j) {
        s[j] = (q[b][i] * k[b][j]).sum().item<double>() / std::sqrt(double(K));
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j <= i; ++j)
        z += std::exp(s[j] - mx);
      for (int j = 0; j <= i; ++j)
        ref[b][i] += std::exp(s[j] - mx) / z * v[b][j];
    }
  EXPECT_LT(maxDiff(softmaxAttention(q, k, v), ref), 1e-12);
  checkGradients([](const std::vector<Tensor> &a) { return softmaxAttention(a[0], a[1], a[2]); }, {q, k, v});
}

TEST_F(Primitives, TaylorFeatureMapApproximatesExp) {
  int F = 8;
  Tensor q = rnd({1, 1, F}, 0.3), k = rnd({1, 1, F}, 0.3);
  double dot = (q * k).sum().item<double>();
  double phi = (taylorMap(q) * taylorMap(k)).sum().item<double>();
  // φ(q)·φ(k) = 1 + q·k/√F + (q·k)²/(2F) exactly (protocol §3.4).
  EXPECT_NEAR(phi, 1 + dot / std::sqrt(double(F)) + dot * dot / (2.0 * F), 1e-12);
  EXPECT_EQ(taylorMap(q).size(-1), 1 + F + F * F);
  checkGradients([](const std::vector<Tensor> &a) { return taylorMap(a[0]); }, {rnd({2, 3, 3})});
}

TEST_F(Primitives, LinearAttention) {
  int B = 2, T = 5, F = 3, V = 2;
  Tensor q = rnd({B, T, F}).abs(), k = rnd({B, T, F}).abs(), v = rnd({B, T, V});
  Tensor ref = at::zeros({B, T, V}, f64());
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < T; ++i) {
      Tensor num = at::zeros({V}, f64());
      double den = 0;
      for (int j = 0; j <= i; ++j) {
        double a = (q[b][i] * k[b][j]).sum().item<double>();
        num += a * v[b][j];
        den += a;
      }
      ref[b][i] = num / (den + 1e-12);
    }
  EXPECT_LT(maxDiff(linearAttention(q, k, v, 1e-12), ref), 1e-12);
  checkGradients([](const std::vector<Tensor> &a) { return linearAttention(a[0], a[1], a[2], 1e-12); },
                 {q, k, v});
}

TEST_F(Primitives, SelectiveScan) {
  int B = 2, T = 5, D = 3, N = 4;
  Tensor x = rnd({B, T, D}), delta = at::softplus(rnd({B, T, D})), A = -at::exp(rnd({D, N}, 0.5)),
         Bm = rnd({B, T, N}), Cm = rnd({B, T, N}), Dv = rnd({D});
  Tensor ref = at::zeros({B, T, D}, f64());
  auto X = x.accessor<double, 3>(), Dl = delta.accessor<double, 3>();
  auto Aa = A.accessor<double, 2>();
  auto BB = Bm.accessor<double, 3>(), CC = Cm.accessor<double, 3>();
  auto R = ref.accessor<double, 3>();
  for (int b = 0; b < B; ++b)
    for (int d = 0; d < D; ++d) {
      std::vector<double> s(N, 0.0);
      for (int t = 0; t < T; ++t) {
        double y = Dv[d].item<double>() * X[b][t][d];
        for (int n = 0; n < N; ++n) {
          s[n] = std::exp(Dl[b][t][d] * Aa[d][n]) * s[n] + Dl[b][t][d] * BB[b][t][n] * X[b][t][d];
          y += CC[b][t][n] * s[n];
        }
        R[b][t][d] = y;
      }
    }
  EXPECT_LT(maxDiff(selectiveScan(x, delta, A, Bm, Cm, Dv), ref), 1e-12);
  checkGradients([](const std::vector<Tensor> &a) {
    return selectiveScan(a[0], a[1], a[2], a[3], a[4], a[5]);
  }, {x, delta, A, Bm, Cm, Dv});
}

TEST_F(Primitives, SelectiveScanFloat32MatchesDouble) {
  Tensor x = rnd({3, 7, 4}), delta = at::softplus(rnd({3, 7, 4})), A = -at::exp(rnd({4, 5})),
         Bm = rnd({3, 7, 5}), Cm = rnd({3, 7, 5}), Dv = rnd({4});
  Tensor y64 = selectiveScan(x, delta, A, Bm, Cm, Dv);
  Tensor y32 = selectiveScan(x.to(at::kFloat), delta.to(at::kFloat), A.to(at::kFloat),
                             Bm.to(at::kFloat), Cm.to(at::kFloat), Dv.to(at::kFloat));
  EXPECT_LT(maxDiff(y32.to(at::kDouble), y64), 1e-4);
}

TEST_F(Primitives, DeltaRule) {
  int B = 2, T = 5, K = 3, V = 2;
  Tensor q = rnd({B, T, K}), k = l2Norm(rnd({B, T, K}), 1e-6), v = rnd({B, T, V}),
         beta = at::sigmoid(rnd({B, T, 1}));
  Tensor ref = at::zeros({B, T, V}, f64());
  for (int b = 0; b < B; ++b) {
    std::vector<std::vector<double>> S(V, std::vector<double>(K, 0.0));
    for (int t = 0; t < T; ++t) {
      double bt = beta[b][t][0].item<double>();
      // S ← S (I − β k kᵀ) + β v kᵀ
      std::vector<double> Sk(V, 0.0);
      for (int i = 0; i < V; ++i)
        for (int j = 0; j < K; ++j)
          Sk[i] += S[i][j] * k[b][t][j].item<double>();
      for (int i = 0; i < V; ++i)
        for (int j = 0; j < K; ++j)
          S[i][j] += bt * (v[b][t][i].item<double>() - Sk[i]) * k[b][t][j].item<double>();
      for (int i = 0; i < V; ++i) {
        double o = 0;
        for (int j = 0; j < K; ++j)
          o += S[i][j] * q[b][t][j].item<double>();
        ref[b][t][i] = o;
      }
    }
  }
  EXPECT_LT(maxDiff(deltaRule(q, k, v, beta), ref), 1e-12);
  checkGradients([](const std::vector<Tensor> &a) { return deltaRule(a[0], a[1], a[2], a[3]); },
                 {q, k, v, beta});
}

TEST_F(Primitives, Norms) {
  Tensor x = rnd({2, 3, 4}), w = rnd({4});
  Tensor rms = at::zeros_like(x), l2 = at::zeros_like(x);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t) {
      double ss = 0;
      for (int d = 0; d < 4; ++d)
        ss += std::pow(x[b][t][d].item<double>(), 2);
      for (int d = 0; d < 4; ++d) {
        rms[b][t][d] = x[b][t][d].item<double>() / std::sqrt(ss / 4 + 1e-5) * w[d].item<double>();
        l2[b][t][d] = x[b][t][d].item<double>() / std::sqrt(ss + 1e-6);
      }
    }
  EXPECT_LT(maxDiff(rmsNorm(x, w, 1e-5), rms), 1e-12);
  EXPECT_LT(maxDiff(l2Norm(x, 1e-6), l2), 1e-12);
  checkGradients([](const std::vector<Tensor> &a) { return rmsNorm(a[0], a[1], 1e-5); }, {x, w});
  checkGradients([](const std::vector<Tensor> &a) { return l2Norm(a[0], 1e-6); }, {x});
}

TEST_F(Primitives, BroadcastMulWithinPositionsFollowsLibTorch) {
  // The fast path (float, shared leading dims of at least 16 rows, a
  // broadcast only inside) against LibTorch's broadcasting mul and its
  // autograd: H3's outer product and readout shapes, a per-row scale,
  // leading dims of size 1, and shapes it leaves to at::mul (a broadcast
  // over the leading dim, equal shapes, an inner block over 16 floats).
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{4, 5, 3, 2, 1}, {4, 5, 3, 1, 2}}, {{4, 5, 3, 2, 1}, {4, 5, 3, 2, 2}}, {{6, 7, 3}, {6, 7, 1}},
      {{4, 5, 1, 3}, {4, 5, 2, 1}},       {{1, 5, 3}, {4, 5, 3}},             {{4, 5, 3}, {4, 5, 3}},
      {{6, 1, 3, 2, 1}, {6, 1, 3, 1, 2}}, {{1, 6, 3, 2, 1}, {1, 6, 3, 1, 2}}, {{6, 3, 1, 1, 2, 1}, {6, 3, 1, 1, 1, 2}},
      {{4, 5, 1, 17}, {4, 5, 2, 1}}};
  for (const auto &[sa, sb] : cases) {
    SCOPED_TRACE(c10::str(at::IntArrayRef(sa), " * ", at::IntArrayRef(sb)));
    // The gradient arrives contiguous (a product), as an expand (the
    // backward of a sum over the last-but-one dim, H3's readout) or
    // transposed over the leading dims (read through a copy).
    for (const char *use : {"product", "sum", "transpose", "strided size-1 dims"}) {
      SCOPED_TRACE(use);
      Tensor a = at::randn(sa).set_requires_grad(true), b = at::randn(sb).set_requires_grad(true);
      Tensor a2 = a.detach().clone().set_requires_grad(true), b2 = b.detach().clone().set_requires_grad(true);
      Tensor got = broadcastMul(a, b), want = a2 * b2;
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_LT(maxDiff(got, want), 1e-6);
      auto loss = [&](const Tensor &out) {
        Tensor o = std::string(use) == "sum" ? out.sum(out.dim() - 2)
                   : std::string(use) == "transpose" ? out.transpose(0, 1)
                                                     : out;
        return (o * at::randn_like(o, at::TensorOptions().dtype(at::kFloat))).sum();
      };
      if (std::string(use) == "strided size-1 dims") {
        // A gradient whose size-1 dims have strides no contiguous tensor
        // would give them, handed to the backward as it is.
        Tensor g = at::randn(want.sizes());
        std::vector<int64_t> strides = g.strides().vec();
        for (int64_t d = 0; d < g.dim(); ++d)
          if (g.size(d) == 1)
            strides[d] = 7 + d;
        Tensor gs = at::empty_strided(g.sizes(), strides).copy_(g);
        auto gotGrads = torch::autograd::grad({got}, {a, b}, {gs});
        auto wantGrads = torch::autograd::grad({want}, {a2, b2}, {g});
        EXPECT_LT(maxDiff(gotGrads[0], wantGrads[0]), 1e-5);
        EXPECT_LT(maxDiff(gotGrads[1], wantGrads[1]), 1e-5);
        continue;
      }
      at::manual_seed(11);
      loss(got).backward();
      at::manual_seed(11);
      loss(want).backward();
      EXPECT_LT(maxDiff(a.grad(), a2.grad()), 1e-5);
      EXPECT_LT(maxDiff(b.grad(), b2.grad()), 1e-5);
    }
  }
}

TEST_F(Primitives, SumOverSmallDimsFollowsLibTorch) {
  // The fast path (float, a reduced dim of 2-8 with a block of 1-8 after
  // it, not the first dim) and the shapes it leaves to at::sum, values and
  // gradients against LibTorch's sum and its autograd.
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  std::vector<Case> cases = {{{4, 5, 3, 2, 2}, 3}, {{4, 5, 3, 2, 2}, 4}, {{4, 5, 3, 2, 2}, -2}, {{6, 4, 8}, 1},
                             {{6, 8, 4}, 1},       {{5, 3}, 1},          {{4, 5, 3}, 0},        {{3, 2, 16}, 1}};
  for (const Case &c : cases)
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE(c10::str(at::IntArrayRef(c.shape), " axis ", c.axis, keepdim ? " keepdim" : ""));
      Tensor x = at::randn(c.shape).set_requires_grad(true);
      Tensor x2 = x.detach().clone().set_requires_grad(true);
      Tensor got = sumOver(x, c.axis, keepdim), want = x2.sum(c.axis, keepdim);
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_LT(maxDiff(got, want), 1e-6);
      Tensor g = at::randn_like(want);
      (got * g).sum().backward();
      (want * g).sum().backward();
      EXPECT_LT(maxDiff(x.grad(), x2.grad()), 1e-6);
    }
}

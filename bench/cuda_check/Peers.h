//===- Peers.h - the natural peers of the generated recurrence kernels ------===//
//
// What a researcher would otherwise run on a GPU: the recurrent mixers in their
// chunked PyTorch form (tensor ops only, autograd for the backward), so
// they run on any device. cuda_check times the generated kernels against
// these, and checks these against the runtime's reference sweeps first.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_BENCH_CUDA_CHECK_PEERS_H
#define MIXC_BENCH_CUDA_CHECK_PEERS_H

#include <ATen/ATen.h>

namespace mixc::peers {

/// Mamba's selective scan (protocol §3.7: s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t,
/// y_t = C_t · s_t + D ⊙ x_t) in chunks of L steps: inside a chunk the
/// states are Σ_{s≤t} exp(c_t − c_s) u_s with c the running sum of Δ A
/// ([B, nc, L, L, D, N] at once); across chunks a loop of nc steps carries
/// the state. x, dt [B, T, D]; A [D, N]; B, C [B, T, N]; D [D] -> [B, T, D].
inline at::Tensor chunkedSelectiveScan(const at::Tensor &x, const at::Tensor &dt, const at::Tensor &A,
                                       const at::Tensor &Bm, const at::Tensor &Cm, const at::Tensor &D,
                                       int64_t L) {
  const int64_t nb = x.size(0), nt = x.size(1), nd = x.size(2), nn = A.size(1);
  const int64_t nc = (nt + L - 1) / L, pad = nc * L - nt;
  // Padding steps have Δ = 0: no decay, no input; their outputs are dropped.
  auto padT = [&](const at::Tensor &t) { return pad ? at::constant_pad_nd(t, {0, 0, 0, pad}) : t; };
  at::Tensor xp = padT(x), dtp = padT(dt), Bp = padT(Bm), Cp = padT(Cm);
  at::Tensor a = (dtp.unsqueeze(-1) * A).view({nb, nc, L, nd, nn});                    // log decay
  at::Tensor u = ((dtp * xp).unsqueeze(-1) * Bp.unsqueeze(2)).view({nb, nc, L, nd, nn}); // inputs
  at::Tensor c = a.cumsum(2);
  at::Tensor diff = c.unsqueeze(3) - c.unsqueeze(2); // [B, nc, L(t), L(s), D, N]: c_t − c_s
  at::Tensor later = at::ones({L, L}, x.options().dtype(at::kBool)).triu(1).view({1, 1, L, L, 1, 1});
  at::Tensor w = diff.masked_fill(later, -INFINITY).exp();
  at::Tensor hIntra = (w * u.unsqueeze(2)).sum(3); // [B, nc, L, D, N]
  std::vector<at::Tensor> h0{at::zeros({nb, nd, nn}, x.options())};
  for (int64_t k = 0; k + 1 < nc; ++k)
    h0.push_back(c.select(1, k).select(1, L - 1).exp() * h0.back() + hIntra.select(1, k).select(1, L - 1));
  at::Tensor start = at::stack(h0, 1).unsqueeze(2); // [B, nc, 1, D, N]
  at::Tensor h = hIntra + c.exp() * start;
  at::Tensor y = (h * Cp.view({nb, nc, L, 1, nn})).sum(-1).view({nb, nc * L, nd});
  return y.narrow(1, 0, nt) + D * x;
}

/// DeltaNet's delta rule (u_t = v_t − S_{t−1} k_t, S_t = S_{t−1} + β_t u_t k_tᵀ,
/// o_t = S_t q_t) in chunks of L steps, the WY form of flash-linear-attention's
/// chunk_delta_rule: per chunk U = T(V_β − K_β S₀ᵀ) with T = (I + tril(K_β Kᵀ, −1))⁻¹,
/// O = Q S₀ᵀ + tril(Q Kᵀ) U, S ← S + Uᵀ K. q, k [B, T, K]; v [B, T, V];
/// beta [B, T, 1] -> [B, T, V].
inline at::Tensor chunkedDeltaRule(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                                   const at::Tensor &beta, int64_t L) {
  const int64_t nb = q.size(0), nt = q.size(1), nk = q.size(2), nv = v.size(2);
  const int64_t nc = (nt + L - 1) / L, pad = nc * L - nt;
  // Padding steps have k = 0, β = 0: they leave the state alone.
  auto padT = [&](const at::Tensor &t) { return pad ? at::constant_pad_nd(t, {0, 0, 0, pad}) : t; };
  at::Tensor qc = padT(q).view({nb, nc, L, nk}), kc = padT(k).view({nb, nc, L, nk});
  at::Tensor vc = padT(v).view({nb, nc, L, nv}), bc = padT(beta).view({nb, nc, L, 1});
  at::Tensor kb = kc * bc, vb = vc * bc;
  at::Tensor eye = at::eye(L, q.options());
  at::Tensor lower = at::matmul(kb, kc.transpose(-1, -2)).tril(-1) + eye; // [B, nc, L, L]
  at::Tensor T = at::linalg_solve_triangular(lower, eye.expand_as(lower), /*upper=*/false);
  at::Tensor w = at::matmul(T, kb), u = at::matmul(T, vb);
  at::Tensor causal = at::matmul(qc, kc.transpose(-1, -2)).tril(0);
  at::Tensor S = at::zeros({nb, nk, nv}, q.options()); // Sᵀ: [K, V]
  std::vector<at::Tensor> outs;
  for (int64_t i = 0; i < nc; ++i) {
    at::Tensor ui = u.select(1, i) - at::matmul(w.select(1, i), S);
    outs.push_back(at::matmul(qc.select(1, i), S) + at::matmul(causal.select(1, i), ui));
    S = S + at::matmul(kc.select(1, i).transpose(-1, -2), ui);
  }
  return at::stack(outs, 1).view({nb, nc * L, nv}).narrow(1, 0, nt);
}

/// Causal normalised linear attention (protocol §3.4: o_t = Σ_{s≤t}
/// (φq_t·φk_s) v_s / (Σ_{s≤t} φq_t·φk_s + eps)) in chunks of L steps: the
/// masked [L, L] products inside a chunk, the running state S = Σ φk vᵀ,
/// z = Σ φk across chunks. q, k [B, T, F]; v [B, T, D] -> [B, T, D].
inline at::Tensor chunkedLinearAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                                         double eps, int64_t L) {
  const int64_t nb = q.size(0), nt = q.size(1), nf = q.size(2), nd = v.size(2);
  const int64_t nc = (nt + L - 1) / L, pad = nc * L - nt;
  // Padding steps have k = 0: they add nothing to the state.
  auto padT = [&](const at::Tensor &t) { return pad ? at::constant_pad_nd(t, {0, 0, 0, pad}) : t; };
  at::Tensor qc = padT(q).view({nb, nc, L, nf}), kc = padT(k).view({nb, nc, L, nf});
  at::Tensor vc = padT(v).view({nb, nc, L, nd});
  at::Tensor intra = at::matmul(qc, kc.transpose(-1, -2)).tril(0); // [B, nc, L, L]
  at::Tensor S = at::zeros({nb, nf, nd}, q.options()), z = at::zeros({nb, nf, 1}, q.options());
  std::vector<at::Tensor> outs;
  for (int64_t i = 0; i < nc; ++i) {
    at::Tensor qi = qc.select(1, i), ki = kc.select(1, i), vi = vc.select(1, i), ai = intra.select(1, i);
    at::Tensor num = at::matmul(ai, vi) + at::matmul(qi, S);
    at::Tensor den = ai.sum(-1, true) + at::matmul(qi, z) + eps;
    outs.push_back(num / den);
    S = S + at::matmul(ki.transpose(-1, -2), vi);
    z = z + ki.sum(1).unsqueeze(-1);
  }
  return at::stack(outs, 1).view({nb, nc * L, nd}).narrow(1, 0, nt);
}

} // namespace mixc::peers

#endif

//===- Recurrences.cpp - selective scan and delta rule ----------------------===//
//
// Both are custom autograd functions: the forward sweeps T once per batch
// row (rows in parallel) and keeps every state; the backward sweeps T in
// reverse with the hand-derived adjoints written next to each update. No
// per-step graph of small tensor ops is built.
//
//===----------------------------------------------------------------------===//
#include "abi/KernelAbi.h"
#include "runtime/core/Primitives.h"
#include "runtime/core/NodeAttrs.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <vector>

namespace mixc::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// A StateAccess's edit as raw arrays (none when pos is null): after step
/// pos[b], row b's state (`size` floats, abi/StateLayout.h) becomes
/// value[b] or state + value[b].
template <typename T>
struct Edit {
  const int64_t *pos = nullptr;
  const T *value = nullptr;
  const int32_t *add = nullptr;
  const int32_t *reader = nullptr; // MIXK_EDIT_* per row (abi/KernelAbi.h), or both
  int64_t size = 0;
  bool at(int64_t b, int64_t t) const { return pos && pos[b] == t; }
  /// Element j of row b's state after the edit.
  T apply(int64_t b, int64_t j, T s) const { return add[b] ? s + value[b * size + j] : value[b * size + j]; }
  /// Whether row b's edit reaches the output at its step, and the next step.
  bool toOutput(int64_t b) const { return !reader || reader[b] != MIXK_EDIT_NEXT_STEP; }
  bool toNextStep(int64_t b) const { return !reader || reader[b] != MIXK_EDIT_OUTPUT; }
  /// Element j of row b's state at the edited step: `read`, what the
  /// output reads; `s`, what is handed on.
  void split(int64_t b, int64_t j, T &s, T &read) const {
    const T edited = apply(b, j, s);
    read = toOutput(b) ? edited : s;
    s = toNextStep(b) ? edited : s;
  }
};

/// The edit arrays of `a` for a [B, ...] batch with `size`-float states,
/// checked; `keep` holds the contiguous copies alive.
template <typename T>
Edit<T> editOf(const StateAccess &a, int64_t nb, int64_t size, std::vector<at::Tensor> &keep) {
  Edit<T> e;
  if (!a.editPos.defined())
    return e;
  TORCH_CHECK(a.editPos.numel() == nb && a.editValue.numel() == nb * size && a.editAdd.numel() == nb,
              "state edit: arrays for ", a.editPos.numel(), " rows and ", a.editValue.numel(),
              " values, not ", nb, " rows of ", size);
  keep = {a.editPos.to(at::kLong).contiguous(), a.editValue.to(c10::CppTypeToScalarType<T>::value).contiguous(),
          a.editAdd.to(at::kInt).contiguous()};
  e.pos = keep[0].data_ptr<int64_t>(), e.value = keep[1].data_ptr<T>(), e.add = keep[2].data_ptr<int32_t>();
  if (a.editReader.defined()) {
    TORCH_CHECK(a.editReader.numel() == nb, "state edit: readers for ", a.editReader.numel(), " rows, not ", nb);
    keep.push_back(a.editReader.to(at::kInt).contiguous());
    e.reader = keep.back().data_ptr<int32_t>();
  }
  e.size = size;
  return e;
}

// ---------------------------------------------------------------- selective scan
//   s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t,   y_t = C_t · s_t + D ⊙ x_t
// per channel d with state s ∈ R^N.

// exp(Δ_t A) is computed beforehand as one vectorised tensor op ([B, T, D, N]);
// the sweeps below are then multiply-adds only.
template <typename T>
void scanForward(const T *x, const T *dt, const T *dAll, const T *B, const T *C, const T *D,
                 T *y, T *states, int64_t nb, int64_t nt, int64_t nd, int64_t nn, const Edit<T> &edit = {}) {
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> s(nn);
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t d = 0; d < nd; ++d) {
        std::fill(s.begin(), s.end(), T(0));
        for (int64_t t = 0; t < nt; ++t) {
          int64_t i = (b * nt + t) * nd + d;
          const T *Bt = B + (b * nt + t) * nn, *Ct = C + (b * nt + t) * nn;
          T xv = x[i], dv = dt[i], acc = 0;
          T *st = states + i * nn;
          const T *dA = dAll + i * nn;
          T dx = dv * xv;
          const bool edited = edit.at(b, t);
          for (int64_t n = 0; n < nn; ++n) {
            s[n] = dA[n] * s[n] + dx * Bt[n];
            T read = s[n];
            if (edited) // state layout [D, N]
              edit.split(b, d * nn + n, s[n], read);
            st[n] = s[n];
            acc += Ct[n] * read;
          }
          y[i] = acc + D[d] * xv;
        }
      }
  });
}

template <typename T>
void scanBackward(const T *x, const T *dt, const T *A, const T *dAll, const T *B, const T *C,
                  const T *D, const T *states, const T *gy, T *gx, T *gdt, T *gAPart, T *gB, T *gC,
                  T *gDPart, int64_t nb, int64_t nt, int64_t nd, int64_t nn) {
  // gB, gC are per batch row (summed over d inside a row); gA, gD get
  // per-row partials, summed afterwards, so rows never share outputs.
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> gs(nn);
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t d = 0; d < nd; ++d) {
        std::fill(gs.begin(), gs.end(), T(0));
        T *gAd = gAPart + (b * nd + d) * nn;
        for (int64_t t = nt - 1; t >= 0; --t) {
          int64_t i = (b * nt + t) * nd + d;
          const T *Bt = B + (b * nt + t) * nn, *Ct = C + (b * nt + t) * nn;
          T *gBt = gB + (b * nt + t) * nn, *gCt = gC + (b * nt + t) * nn;
          const T *st = states + i * nn;
          const T *sPrev = t > 0 ? states + (i - nd) * nn : nullptr;
          T g = gy[i], xv = x[i], dv = dt[i];
          gDPart[b * nd + d] += g * xv;         // y += D x
          T gxv = g * D[d], gdv = 0;
          const T *dAt = dAll + i * nn;
          for (int64_t n = 0; n < nn; ++n) {
            gCt[n] += g * st[n];                // y += C s
            gs[n] += g * Ct[n];
            T a = A[d * nn + n], dA = dAt[n];
            T prev = sPrev ? sPrev[n] : T(0);
            T gdA = gs[n] * prev;               // s = dA·s_prev + Δ B x
            gdv += gdA * dA * a + gs[n] * Bt[n] * xv;
            gAd[n] += gdA * dA * dv;
            gBt[n] += gs[n] * dv * xv;
            gxv += gs[n] * dv * Bt[n];
            gs[n] *= dA;                        // on to s_prev
          }
          gx[i] = gxv;
          gdt[i] = gdv;
        }
      }
  });
}

struct SelectiveScanFn : torch::autograd::Function<SelectiveScanFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor x, at::Tensor dt, at::Tensor A,
                               at::Tensor B, at::Tensor C, at::Tensor D) {
    x = x.contiguous(), dt = dt.contiguous(), A = A.contiguous();
    B = B.contiguous(), C = C.contiguous(), D = D.contiguous();
    TORCH_CHECK(x.is_cpu(), "selective_scan: the LibTorch path sweeps on the host; on ", x.device(),
                " use the generated CUDA kernels");
    int64_t nb = x.size(0), nt = x.size(1), nd = x.size(2), nn = A.size(1);
    at::Tensor y = at::empty_like(x);
    at::Tensor states = at::empty({nb, nt, nd, nn}, x.options());
    at::Tensor dA = at::exp(dt.unsqueeze(-1) * A).contiguous(); // [B, T, D, N]
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan", [&] {
      scanForward<scalar_t>(x.data_ptr<scalar_t>(), dt.data_ptr<scalar_t>(),
                            dA.data_ptr<scalar_t>(), B.data_ptr<scalar_t>(),
                            C.data_ptr<scalar_t>(), D.data_ptr<scalar_t>(),
                            y.data_ptr<scalar_t>(), states.data_ptr<scalar_t>(), nb, nt, nd, nn);
    });
    ctx->save_for_backward({x, dt, A, B, C, D, states});
    return {y};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    at::Tensor x = saved[0], dt = saved[1], A = saved[2], B = saved[3], C = saved[4],
               D = saved[5], states = saved[6];
    at::Tensor gy = grads[0].contiguous();
    int64_t nb = x.size(0), nt = x.size(1), nd = x.size(2), nn = A.size(1);
    at::Tensor gx = at::empty_like(x), gdt = at::empty_like(dt);
    at::Tensor gB = at::zeros_like(B), gC = at::zeros_like(C);
    at::Tensor gAPart = at::zeros({nb, nd, nn}, x.options());
    at::Tensor gDPart = at::zeros({nb, nd}, x.options());
    at::Tensor dA = at::exp(dt.unsqueeze(-1) * A).contiguous(); // recomputed, as in forward
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan_backward", [&] {
      scanBackward<scalar_t>(x.data_ptr<scalar_t>(), dt.data_ptr<scalar_t>(),
                             A.data_ptr<scalar_t>(), dA.data_ptr<scalar_t>(), B.data_ptr<scalar_t>(),
                             C.data_ptr<scalar_t>(), D.data_ptr<scalar_t>(),
                             states.data_ptr<scalar_t>(), gy.data_ptr<scalar_t>(),
                             gx.data_ptr<scalar_t>(), gdt.data_ptr<scalar_t>(),
                             gAPart.data_ptr<scalar_t>(), gB.data_ptr<scalar_t>(),
                             gC.data_ptr<scalar_t>(), gDPart.data_ptr<scalar_t>(), nb, nt, nd, nn);
    });
    return {gx, gdt, gAPart.sum(0), gB, gC, gDPart.sum(0)};
  }
};

// ---------------------------------------------------------------- delta rule
//   u_t = v_t − S_{t−1} k_t,  S_t = S_{t−1} + β_t u_t k_tᵀ,  o_t = S_t q_t
// with S ∈ R^{V×K} (row-major [v][k]).

template <typename T>
void deltaForward(const T *q, const T *k, const T *v, const T *beta, T *o, T *states,
                  int64_t nb, int64_t nt, int64_t nk, int64_t nv, const Edit<T> &edit = {}) {
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> S(nv * nk), u(nv);
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(S.begin(), S.end(), T(0));
      for (int64_t t = 0; t < nt; ++t) {
        const T *kt = k + (b * nt + t) * nk, *qt = q + (b * nt + t) * nk;
        const T *vt = v + (b * nt + t) * nv;
        T bt = beta[b * nt + t];
        for (int64_t i = 0; i < nv; ++i) {
          T sk = 0;
          for (int64_t j = 0; j < nk; ++j)
            sk += S[i * nk + j] * kt[j];
          u[i] = vt[i] - sk;
        }
        T *ot = o + (b * nt + t) * nv;
        const bool edited = edit.at(b, t);
        for (int64_t i = 0; i < nv; ++i) {
          T acc = 0;
          for (int64_t j = 0; j < nk; ++j) {
            S[i * nk + j] += bt * u[i] * kt[j];
            T read = S[i * nk + j];
            if (edited) // state layout [V, K]
              edit.split(b, i * nk + j, S[i * nk + j], read);
            acc += read * qt[j];
          }
          ot[i] = acc;
        }
        std::copy(S.begin(), S.end(), states + (b * nt + t) * nv * nk);
      }
    }
  });
}

template <typename T>
void deltaBackward(const T *q, const T *k, const T *v, const T *beta, const T *states,
                   const T *go, T *gq, T *gk, T *gv, T *gbeta, int64_t nb, int64_t nt,
                   int64_t nk, int64_t nv) {
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> G(nv * nk), u(nv), gu(nv);
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(G.begin(), G.end(), T(0)); // dL/dS_t, accumulated backwards
      for (int64_t t = nt - 1; t >= 0; --t) {
        int64_t row = b * nt + t;
        const T *kt = k + row * nk, *qt = q + row * nk, *vt = v + row * nv, *got = go + row * nv;
        const T *St = states + row * nv * nk;
        const T *Sp = t > 0 ? states + (row - 1) * nv * nk : nullptr;
        T bt = beta[row];
        T *gqt = gq + row * nk, *gkt = gk + row * nk, *gvt = gv + row * nv;
        // o = S_t q: G += go qᵀ, gq = S_tᵀ go.
        std::fill(gqt, gqt + nk, T(0));
        for (int64_t i = 0; i < nv; ++i)
          for (int64_t j = 0; j < nk; ++j) {
            G[i * nk + j] += got[i] * qt[j];
            gqt[j] += St[i * nk + j] * got[i];
          }
        // u = v − S_prev k (recomputed).
        for (int64_t i = 0; i < nv; ++i) {
          T sk = 0;
          if (Sp)
            for (int64_t j = 0; j < nk; ++j)
              sk += Sp[i * nk + j] * kt[j];
          u[i] = vt[i] - sk;
        }
        // S_t = S_prev + β u kᵀ: gβ = uᵀ G k, gu = β G k, gk = β Gᵀ u.
        T gb = 0;
        std::fill(gkt, gkt + nk, T(0));
        for (int64_t i = 0; i < nv; ++i) {
          T Gk = 0;
          for (int64_t j = 0; j < nk; ++j) {
            Gk += G[i * nk + j] * kt[j];
            gkt[j] += bt * G[i * nk + j] * u[i];
          }
          gb += u[i] * Gk;
          gu[i] = bt * Gk;
          gvt[i] = gu[i]; // u = v − ...
        }
        gbeta[row] = gb;
        // u = v − S_prev k: gk −= S_prevᵀ gu; dL/dS_prev = G − gu kᵀ.
        for (int64_t i = 0; i < nv; ++i)
          for (int64_t j = 0; j < nk; ++j) {
            if (Sp)
              gkt[j] -= Sp[i * nk + j] * gu[i];
            G[i * nk + j] -= gu[i] * kt[j];
          }
      }
    }
  });
}

struct DeltaRuleFn : torch::autograd::Function<DeltaRuleFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor q, at::Tensor k, at::Tensor v,
                               at::Tensor beta) {
    q = q.contiguous(), k = k.contiguous(), v = v.contiguous(), beta = beta.contiguous();
    TORCH_CHECK(q.is_cpu(), "delta_rule: the LibTorch path sweeps on the host; on ", q.device(),
                " use the generated CUDA kernels");
    int64_t nb = q.size(0), nt = q.size(1), nk = q.size(2), nv = v.size(2);
    at::Tensor o = at::empty({nb, nt, nv}, v.options());
    at::Tensor states = at::empty({nb, nt, nv, nk}, v.options());
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "delta_rule", [&] {
      deltaForward<scalar_t>(q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(),
                             v.data_ptr<scalar_t>(), beta.data_ptr<scalar_t>(),
                             o.data_ptr<scalar_t>(), states.data_ptr<scalar_t>(), nb, nt, nk, nv);
    });
    ctx->save_for_backward({q, k, v, beta, states});
    return {o};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto s = ctx->get_saved_variables();
    at::Tensor q = s[0], k = s[1], v = s[2], beta = s[3], states = s[4];
    at::Tensor go = grads[0].contiguous();
    int64_t nb = q.size(0), nt = q.size(1), nk = q.size(2), nv = v.size(2);
    at::Tensor gq = at::empty_like(q), gk = at::empty_like(k), gv = at::empty_like(v),
               gbeta = at::empty_like(beta);
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "delta_rule_backward", [&] {
      deltaBackward<scalar_t>(q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(),
                              v.data_ptr<scalar_t>(), beta.data_ptr<scalar_t>(),
                              states.data_ptr<scalar_t>(), go.data_ptr<scalar_t>(),
                              gq.data_ptr<scalar_t>(), gk.data_ptr<scalar_t>(),
                              gv.data_ptr<scalar_t>(), gbeta.data_ptr<scalar_t>(), nb, nt, nk, nv);
    });
    return {gq, gk, gv, gbeta};
  }
};
/// Linear attention as a recurrence (forward only), states [B, T, F·D + F].
template <typename T>
void linearForward(const T *q, const T *k, const T *v, T *o, T *states, int64_t nb, int64_t nt, int64_t nf,
                   int64_t nd, T eps, const Edit<T> &edit) {
  const int64_t size = nf * nd + nf;
  at::parallel_for(0, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> s(size), edited(size); // S [F, D], then z [F]
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(s.begin(), s.end(), T(0));
      for (int64_t t = 0; t < nt; ++t) {
        int64_t row = b * nt + t;
        const T *qt = q + row * nf, *kt = k + row * nf, *vt = v + row * nd;
        for (int64_t f = 0; f < nf; ++f) {
          for (int64_t d = 0; d < nd; ++d)
            s[f * nd + d] += kt[f] * vt[d];
          s[nf * nd + f] += kt[f];
        }
        const T *read = s.data(); // the state the output reads
        if (edit.at(b, t)) {
          for (int64_t j = 0; j < size; ++j)
            edit.split(b, j, s[j], edited[j]);
          read = edited.data();
        }
        std::copy(s.begin(), s.end(), states + row * size);
        T den = eps;
        for (int64_t f = 0; f < nf; ++f)
          den += qt[f] * read[nf * nd + f];
        for (int64_t d = 0; d < nd; ++d) {
          T num = 0;
          for (int64_t f = 0; f < nf; ++f)
            num += qt[f] * read[f * nd + d];
          o[row * nd + d] = num / den;
        }
      }
    }
  });
}

/// Copies every state into the access's capture, when it asks for them.
void capture(const StateAccess &a, const at::Tensor &states) {
  if (!a.capture.defined())
    return;
  TORCH_CHECK(a.capture.numel() == states.numel(), "state capture: room for ", a.capture.numel(),
              " floats, not ", states.numel());
  a.capture.view(states.sizes()).copy_(states);
}

void refuseGrad(const char *op) {
  TORCH_CHECK(!at::GradMode::is_enabled(), op, ": state interventions run without gradients");
}
} // namespace

at::Tensor selectiveScan(const at::Tensor &x0, const at::Tensor &dt0, const at::Tensor &A0, const at::Tensor &B0,
                         const at::Tensor &C0, const at::Tensor &D0, const StateAccess &access) {
  refuseGrad("selective_scan");
  at::Tensor x = x0.contiguous(), dt = dt0.contiguous(), A = A0.contiguous(), B = B0.contiguous(),
             C = C0.contiguous(), D = D0.contiguous();
  int64_t nb = x.size(0), nt = x.size(1), nd = x.size(2), nn = A.size(1);
  at::Tensor y = at::empty_like(x), states = at::empty({nb, nt, nd, nn}, x.options());
  at::Tensor dA = at::exp(dt.unsqueeze(-1) * A).contiguous(); // [B, T, D, N]
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan", [&] {
    std::vector<at::Tensor> keep;
    Edit<scalar_t> edit = editOf<scalar_t>(access, nb, nd * nn, keep);
    scanForward<scalar_t>(x.data_ptr<scalar_t>(), dt.data_ptr<scalar_t>(), dA.data_ptr<scalar_t>(),
                          B.data_ptr<scalar_t>(), C.data_ptr<scalar_t>(), D.data_ptr<scalar_t>(),
                          y.data_ptr<scalar_t>(), states.data_ptr<scalar_t>(), nb, nt, nd, nn, edit);
  });
  capture(access, states);
  return y;
}

at::Tensor deltaRule(const at::Tensor &q0, const at::Tensor &k0, const at::Tensor &v0, const at::Tensor &beta0,
                     const StateAccess &access) {
  refuseGrad("delta_rule");
  at::Tensor q = q0.contiguous(), k = k0.contiguous(), v = v0.contiguous(), beta = beta0.contiguous();
  int64_t nb = q.size(0), nt = q.size(1), nk = q.size(2), nv = v.size(2);
  at::Tensor o = at::empty({nb, nt, nv}, v.options()), states = at::empty({nb, nt, nv, nk}, v.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "delta_rule", [&] {
    std::vector<at::Tensor> keep;
    Edit<scalar_t> edit = editOf<scalar_t>(access, nb, nv * nk, keep);
    deltaForward<scalar_t>(q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(), v.data_ptr<scalar_t>(),
                           beta.data_ptr<scalar_t>(), o.data_ptr<scalar_t>(), states.data_ptr<scalar_t>(), nb,
                           nt, nk, nv, edit);
  });
  capture(access, states);
  return o;
}

at::Tensor linearAttention(const at::Tensor &q0, const at::Tensor &k0, const at::Tensor &v0, double eps,
                           const StateAccess &access) {
  refuseGrad("linear_attention");
  at::Tensor q = q0.contiguous(), k = k0.contiguous(), v = v0.contiguous();
  int64_t nb = q.size(0), nt = q.size(1), nf = q.size(2), nd = v.size(2);
  at::Tensor o = at::empty({nb, nt, nd}, v.options()), states = at::empty({nb, nt, nf * nd + nf}, v.options());
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "linear_attention", [&] {
    std::vector<at::Tensor> keep;
    Edit<scalar_t> edit = editOf<scalar_t>(access, nb, nf * nd + nf, keep);
    linearForward<scalar_t>(q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(), v.data_ptr<scalar_t>(),
                            o.data_ptr<scalar_t>(), states.data_ptr<scalar_t>(), nb, nt, nf, nd,
                            static_cast<scalar_t>(eps), edit);
  });
  capture(access, states);
  return o;
}

at::Tensor selectiveScan(const at::Tensor &x, const at::Tensor &delta, const at::Tensor &A,
                         const at::Tensor &B, const at::Tensor &C, const at::Tensor &D) {
  return SelectiveScanFn::apply(x, delta, A, B, C, D)[0];
}

at::Tensor deltaRule(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                     const at::Tensor &beta) {
  return DeltaRuleFn::apply(q, k, v, beta)[0];
}

at::Tensor probeTerm(const at::Tensor &probe, int64_t t) {
  at::Tensor v = probe.select(1, t);
  return v - v.detach();
}

namespace {
/// Step t's state `flat` [B, S] as the output reads it and as it is handed
/// on, with the probes' zero-valued terms (StateProbes).
std::pair<at::Tensor, at::Tensor> probedStep(const at::Tensor &flat, const StateProbes &p, int64_t t) {
  auto term = [t](const at::Tensor &probe) { return probe.defined() ? probeTerm(probe, t) : at::Tensor(); };
  at::Tensor read = flat, handed = flat;
  for (const at::Tensor &x : {term(p.output), term(p.both)})
    if (x.defined())
      read = read + x;
  for (const at::Tensor &x : {term(p.next), term(p.both)})
    if (x.defined())
      handed = handed + x;
  return {read, handed};
}
} // namespace

at::Tensor probedRecurrence(const graph::Node &n, const std::vector<at::Tensor> &in, const StateProbes &probes) {
  std::vector<at::Tensor> out;
  if (n.op == "selective_scan") { // s_t = exp(Δ_t A) ⊙ s_{t−1} + Δ_t B_t x_t, y_t = C_t·s_t + D x_t; s [D, N]
    const at::Tensor &x = in[0], &dt = in[1], &A = in[2], &B = in[3], &C = in[4], &D = in[5];
    const int64_t nb = x.size(0), nd = x.size(2), nn = A.size(1);
    at::Tensor s = at::zeros({nb, nd, nn}, x.options());
    for (int64_t t = 0; t < x.size(1); ++t) {
      at::Tensor xt = x.select(1, t), dtt = dt.select(1, t); // [B, D]
      s = at::exp(dtt.unsqueeze(-1) * A) * s + (dtt * xt).unsqueeze(-1) * B.select(1, t).unsqueeze(1);
      auto [read, handed] = probedStep(s.reshape({nb, nd * nn}), probes, t);
      out.push_back((read.view({nb, nd, nn}) * C.select(1, t).unsqueeze(1)).sum(-1) + D * xt);
      s = handed.view({nb, nd, nn});
    }
  } else if (n.op == "delta_rule") { // S_t = S_{t−1} + β_t (v_t − S_{t−1} k_t) k_tᵀ, o_t = S_t q_t; S [V, K]
    const at::Tensor &q = in[0], &k = in[1], &v = in[2], &beta = in[3];
    const int64_t nb = q.size(0), nk = q.size(2), nv = v.size(2);
    at::Tensor S = at::zeros({nb, nv, nk}, q.options());
    for (int64_t t = 0; t < q.size(1); ++t) {
      at::Tensor kt = k.select(1, t), u = v.select(1, t) - at::matmul(S, kt.unsqueeze(-1)).squeeze(-1);
      S = S + beta.select(1, t).unsqueeze(-1) * u.unsqueeze(-1) * kt.unsqueeze(1);
      auto [read, handed] = probedStep(S.reshape({nb, nv * nk}), probes, t);
      out.push_back(at::matmul(read.view({nb, nv, nk}), q.select(1, t).unsqueeze(-1)).squeeze(-1));
      S = handed.view({nb, nv, nk});
    }
  } else { // linear attention: S_t = S_{t−1} + k_t v_tᵀ [F, D], z_t = z_{t−1} + k_t [F], o = qᵀS / (q·z + eps)
    TORCH_CHECK(n.op == "linear_attention", "node '", n.name, "' (", n.op, ") has no recurrent state");
    const at::Tensor &q = in[0], &k = in[1], &v = in[2];
    const int64_t nb = q.size(0), nf = q.size(2), nd = v.size(2);
    const double eps = attrF(n, "eps");
    at::Tensor state = at::zeros({nb, nf * nd + nf}, q.options());
    for (int64_t t = 0; t < q.size(1); ++t) {
      at::Tensor kt = k.select(1, t);
      state = state + at::cat({(kt.unsqueeze(-1) * v.select(1, t).unsqueeze(1)).reshape({nb, nf * nd}), kt}, 1);
      auto [read, handed] = probedStep(state, probes, t);
      at::Tensor qt = q.select(1, t), S = read.slice(1, 0, nf * nd).view({nb, nf, nd}), z = read.slice(1, nf * nd);
      out.push_back(at::matmul(qt.unsqueeze(1), S).squeeze(1) / ((qt * z).sum(-1, true) + eps));
      state = handed;
    }
  }
  return at::stack(out, 1);
}

at::Tensor runRecurrence(const graph::Node &n, const std::vector<at::Tensor> &in, const StateAccess *access) {
  if (n.op == "selective_scan")
    return access ? selectiveScan(in[0], in[1], in[2], in[3], in[4], in[5], *access)
                  : selectiveScan(in[0], in[1], in[2], in[3], in[4], in[5]);
  if (n.op == "delta_rule")
    return access ? deltaRule(in[0], in[1], in[2], in[3], *access) : deltaRule(in[0], in[1], in[2], in[3]);
  TORCH_CHECK(n.op == "linear_attention", "node '", n.name, "' (", n.op, ") has no recurrent state");
  return access ? linearAttention(in[0], in[1], in[2], attrF(n, "eps"), *access)
                : linearAttention(in[0], in[1], in[2], attrF(n, "eps"));
}

} // namespace mixc::rt

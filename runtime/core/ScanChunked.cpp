//===- ScanChunked.cpp - a linear scan, chunk by chunk ----------------------===//
// The formulas: ScanChunked.h; the derivation: docs/chunked-form.md §2.
#include "runtime/core/ScanChunked.h"
#include "runtime/core/Model.h"
#include "runtime/core/NodeAttrs.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

namespace mixc::rt {
namespace {
using graph::ChunkFactor;
using graph::ChunkTerm;

/// The step's free values (those the plan names and what they read) for
/// every step at once: a sliced input [B, T, ...] as [B·T, ...], each free
/// node run once on those; loop-invariant inputs whole.
class AllSteps {
public:
  AllSteps(const std::vector<at::Tensor> &inputs, const graph::Node &scan, const graph::ChunkPlan &plan);

  int64_t B = 0, T = 0;

  /// coef · Π factors as [B, T, want...] (einsum over the letters; a
  /// letter of `want` no factor carries: constant along it, size dims[it]).
  at::Tensor product(const std::vector<ChunkFactor> &factors, const std::string &want, double coef,
                     const std::map<char, int64_t> &dims) const;

private:
  at::Tensor factor(const ChunkFactor &f) const; // [B·T, its letters...]
  std::unordered_map<std::string, at::Tensor> values;
  std::vector<std::string> argNames;
};

AllSteps::AllSteps(const std::vector<at::Tensor> &inputs, const graph::Node &scan, const graph::ChunkPlan &plan) {
  const int64_t numStates = attrI(scan, "num_states");
  const std::vector<int64_t> &sliced = attrInts(scan, "sliced");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (sliced[i] && B == 0)
      B = inputs[i].size(0), T = inputs[i].size(1);
  for (const graph::Input &a : scan.bodyArgs)
    argNames.push_back(a.name);
  for (size_t i = 0; i < inputs.size(); ++i) {
    at::Tensor v = inputs[i];
    if (sliced[i]) { // [B, T, ...] -> [B·T, ...]
      std::vector<int64_t> shape = v.sizes().vec();
      shape.erase(shape.begin());
      shape[0] = B * T;
      v = v.reshape(shape);
    }
    values[argNames[numStates + i]] = v;
  }
  for (const std::string &name : plan.freeNodes) {
    // A node of the step: chunkPlanOf checked the plan's names.
    auto node = std::find_if(scan.body.begin(), scan.body.end(), [&](const graph::Node &n) { return n.name == name; });
    std::vector<at::Tensor> in;
    for (const std::string &r : node->inputs)
      in.push_back(values.at(r));
    values[name] = runPrimitive(*node, in).at(0);
  }
}

at::Tensor AllSteps::factor(const ChunkFactor &f) const {
  const std::string name = f.value[0] == '#' ? argNames.at(std::stoul(f.value.substr(1))) : f.value;
  at::Tensor v = values.at(name);
  const int64_t rank = static_cast<int64_t>(f.axes.size());
  if (v.dim() == rank) { // loop-invariant: the same at every step
    std::vector<int64_t> shape = v.sizes().vec();
    shape.insert(shape.begin(), B * T);
    v = v.unsqueeze(0).expand(shape);
  }
  TORCH_CHECK(v.dim() == rank + 1 && v.size(0) == B * T, "chunk plan: '", name, "' is ", v.sizes(),
              ", not one value per step with axes '", f.axes, "'");
  for (int64_t a = rank - 1; a >= 0; --a) // unit axes out
    if (f.axes[a] == '-')
      v = v.squeeze(a + 1);
  return f.inverse ? v.reciprocal() : v;
}

at::Tensor AllSteps::product(const std::vector<ChunkFactor> &factors, const std::string &want, double coef,
                             const std::map<char, int64_t> &dims) const {
  std::vector<int64_t> shape = {B * T};
  for (char a : want)
    shape.push_back(dims.at(a));
  std::vector<at::Tensor> operands;
  std::string equation, carried;
  for (const ChunkFactor &f : factors) {
    operands.push_back(factor(f));
    equation += (equation.empty() ? "z" : ",z");
    for (char a : f.axes)
      if (a != '-')
        equation += a, carried += a;
  }
  // Ones only where a letter of `want` is carried by no factor (or no factor is given).
  if (operands.empty() || want.find_first_not_of(carried) != std::string::npos) {
    operands.push_back(at::ones(shape, operands.empty() ? at::TensorOptions(at::kFloat) : operands[0].options()));
    equation += (operands.size() > 1 ? ",z" : "z") + want;
  }
  equation += "->z" + want;
  shape.erase(shape.begin());
  shape.insert(shape.begin(), {B, T});
  return (at::einsum(equation, operands) * coef).reshape(shape);
}

/// One state's recurrence over all steps: log decays a [B, T, m] (rows),
/// c [B, T, n] (columns) and g [B, T, 1] (scalar), in double; writes.
struct StateSteps {
  int64_t m = 0, n = 0;
  at::Tensor a, c, g;
  bool rowDecay = false, columnDecay = false;
  std::vector<std::pair<at::Tensor, at::Tensor>> writes; // x [B, T, m], y [B, T, n]
};

StateSteps stateSteps(const AllSteps &all, const graph::ChunkState &plan, const std::vector<int64_t> &shape,
                      const std::string &name) {
  StateSteps s;
  s.m = shape.at(1), s.n = shape.at(2);
  const std::map<char, int64_t> dims = {{'r', s.m}, {'c', s.n}};
  s.a = at::zeros({all.B, all.T, s.m}, at::kDouble);
  s.c = at::zeros({all.B, all.T, s.n}, at::kDouble);
  s.g = at::zeros({all.B, all.T, 1}, at::kDouble);
  for (const ChunkFactor &f : plan.decay) {
    std::string letters;
    for (char l : f.axes)
      if (l != '-')
        letters += l;
    TORCH_CHECK(letters.size() <= 1, "chunk plan: a decay factor of state '", name, "' varies along both axes");
    at::Tensor v = all.product({f}, letters, 1.0, dims).to(at::kDouble);
    TORCH_CHECK(!(v < 0).any().item<bool>(), "state '", name,
                "' has a negative decay factor, which its chunked form cannot take; use scan_form = sequential");
    at::Tensor log = v.clamp_min(1e-30).log(); // a decay of 0 as e^{-69}
    if (letters == "c")
      s.c = s.c + log, s.columnDecay = true;
    else if (letters == "r")
      s.a = s.a + log, s.rowDecay = true;
    else
      s.g = s.g + log.unsqueeze(-1);
  }
  for (const ChunkTerm &w : plan.writes) {
    std::vector<ChunkFactor> rows, cols;
    for (const ChunkFactor &f : w.factors)
      (f.axes.find('c') != std::string::npos ? cols : rows).push_back(f);
    s.writes.emplace_back(all.product(rows, "r", w.coef, dims), all.product(cols, "c", 1.0, dims));
  }
  return s;
}

/// A term of an emitted value that reads a state: o = h ⊙ (q contracted
/// with S along the key axis), the other axis (rows when `rowsKept`) kept.
struct Readout {
  size_t state, emit;
  bool rowsKept, previous;
  at::Tensor q, h; // [B, T, key], [B, T, kept]
  std::vector<at::Tensor> pieces; // its chunks' [B, L, kept]
};


/// The decays of one orientation: rows are the key axis (contracted by the
/// readouts), columns the kept axis; the scalar decay rides with the key's.
struct Oriented {
  at::Tensor key, kept;   // [B, T, key] (with the scalar), [B, T, kept] log decays
  bool keyVaries, keptVaries; // per entry (else one value per step)
  std::vector<std::pair<at::Tensor, at::Tensor>> writes;
};

/// Each emitted value's free terms, summed ([B, T, ...] in `out`), and its
/// terms that read a state (`readouts`: q along the key axis, h along the kept one).
void emitParts(const AllSteps &all, const std::vector<StateSteps> &states, const graph::Node &scan,
               const graph::ChunkPlan &plan, const at::TensorOptions &options, std::vector<at::Tensor> &out,
               std::vector<Readout> &readouts) {
  for (size_t j = 0; j < plan.emits.size(); ++j) {
    std::vector<int64_t> shape = scan.shapes.at(j);
    shape[0] = all.B, shape[1] = all.T;
    out.push_back(at::zeros(shape, options));
    for (const ChunkTerm &t : plan.emits[j]) {
      std::string want;
      for (char a : t.out)
        if (a != '-')
          want += a;
      if (t.state < 0) {
        std::map<char, int64_t> dims;
        for (size_t p = 0; p < t.out.size(); ++p)
          if (t.out[p] != '-')
            dims[t.out[p]] = shape[2 + p];
        out[j] = out[j] + all.product(t.factors, want, t.coef, dims).reshape(shape);
        continue;
      }
      const StateSteps &s = states.at(t.state);
      const bool rowsKept = want == "r";
      const char key = rowsKept ? 'c' : 'r', kept = rowsKept ? 'r' : 'c';
      std::vector<ChunkFactor> qf, hf;
      for (const ChunkFactor &f : t.factors)
        (f.axes.find(kept) != std::string::npos ? hf : qf).push_back(f);
      const std::map<char, int64_t> dims = {{'r', s.m}, {'c', s.n}};
      readouts.push_back({static_cast<size_t>(t.state), j, rowsKept, t.previous,
                          all.product(qf, std::string(1, key), t.coef, dims),
                          all.product(hf, std::string(1, kept), 1.0, dims), {}});
    }
  }
}

/// What the plan computes for all steps at once: each state's decays and
/// writes; each emitted value's free terms and its readouts.
struct Prepared {
  std::vector<StateSteps> states;
  std::vector<at::Tensor> free;
  std::vector<Readout> readouts;
};
Prepared prepare(const AllSteps &all, const graph::Node &scan, const graph::ChunkPlan &plan,
                 const at::TensorOptions &options) {
  Prepared p;
  for (size_t k = 0; k < plan.states.size(); ++k)
    p.states.push_back(stateSteps(all, plan.states[k], scan.bodyArgs[k].shape, scan.bodyArgs[k].name));
  emitParts(all, p.states, scan, plan, options, p.free, p.readouts);
  return p;
}

/// State `s` oriented with the key axis as rows (`transposed`: S's columns).
Oriented orient(const StateSteps &s, bool transposed, int64_t B, int64_t T) {
  Oriented d;
  d.writes = s.writes;
  if (transposed)
    for (auto &[x, y] : d.writes)
      std::swap(x, y);
  const bool rowsAreKey = !transposed;
  d.keyVaries = rowsAreKey ? s.rowDecay : s.columnDecay;
  d.keptVaries = rowsAreKey ? s.columnDecay : s.rowDecay;
  d.key = (d.keyVaries ? (rowsAreKey ? s.a : s.c) : at::zeros({B, T, 1}, at::kDouble)) + s.g;
  d.kept = d.keptVaries ? (rowsAreKey ? s.c : s.a) : at::zeros({B, T, 1}, at::kDouble);
  return d;
}

/// e^{X_t − Y_s} for s ≤ t (s < t when `strict`), 0 elsewhere: [B, L, L, ...].
at::Tensor decayBetween(const at::Tensor &Xt, const at::Tensor &Ys, bool strict) {
  const int64_t L = Xt.size(1);
  const at::Tensor steps = at::arange(L, at::kLong);
  const at::Tensor later = strict ? steps.view({1, -1}) >= steps.view({-1, 1}) : steps.view({1, -1}) > steps.view({-1, 1});
  return (Xt.unsqueeze(2) - Ys.unsqueeze(1)).masked_fill(later.view({1, L, L, 1}), -INFINITY).exp();
}

/// Σ_k q_t[k] x_s[k] W[t, s, k] ([B, t, s]); W one value per (t, s) where
/// the key decay does not vary along k (a matrix product then).
at::Tensor keyedAttention(const at::Tensor &q, const at::Tensor &x, const at::Tensor &keyW, bool keyVaries) {
  return keyVaries ? (q.unsqueeze(2) * x.unsqueeze(1) * keyW).sum(-1)
                   : at::matmul(q, x.transpose(1, 2)) * keyW.squeeze(-1);
}

/// A chunk's cumulative log decays (double): A, C through each step; Aq, Cq
/// through the step each readout sees (the same, or one less before the update).
struct Cumulative {
  at::Tensor Aq, A, Cq, C; // [B, L, key or 1], [B, L, kept or 1]
};

/// Rows [from, from + n) of `t`'s time axis.
at::Tensor rowsOf(const at::Tensor &t, int64_t from, int64_t n) { return t.narrow(1, from, n); }

/// The chunk's own writes read within it, Σ_{s ≤ t} (Σ_i q_t[i] x_s[i]
/// e^{A_t[i] − A_s[i]}) (y_s ⊙ e^{C_t − C_s}), block by block of kBlock
/// query steps. Within a block exactly: the exponents masked to s ≤ t
/// ([B, n, n, key] where the key decay varies). From the earlier blocks through step r − 1 as matrix
/// products, e^{A_t − A_s} = e^{A_t − A_{r−1}} e^{A_{r−1} − A_s}, both
/// exponents ≤ 0 for decays ≤ 1 (no overflow).
at::Tensor withinChunk(const at::Tensor &q, const at::Tensor &x, const at::Tensor &y, const Cumulative &cum,
                       const Oriented &d, bool previous) {
  constexpr int64_t kBlock = 16;
  const int64_t L = q.size(1);
  const auto type = q.scalar_type();
  std::vector<at::Tensor> blocks;
  for (int64_t r = 0; r < L; r += kBlock) {
    const int64_t n = std::min(kBlock, L - r);
    // Logs relative to step r − 1 (0 before the chunk), in double: a float
    // difference of two logs near −14 (decays near 1e-6) loses the gradient
    // of the decay to 1e-3 (measured: ScanChunkedTest's "near 0" regime).
    const at::Tensor Aref = r > 0 ? rowsOf(cum.A, r - 1, 1) : at::zeros_like(rowsOf(cum.A, 0, 1));
    const at::Tensor Cref = r > 0 ? rowsOf(cum.C, r - 1, 1) : at::zeros_like(rowsOf(cum.C, 0, 1));
    const at::Tensor Aqb = rowsOf(cum.Aq, r, n) - Aref, Ab = rowsOf(cum.A, r, n) - Aref;
    const at::Tensor Cqb = rowsOf(cum.Cq, r, n) - Cref, Cb = rowsOf(cum.C, r, n) - Cref;
    const at::Tensor qb = rowsOf(q, r, n), xb = rowsOf(x, r, n), yb = rowsOf(y, r, n);
    const at::Tensor keyW = decayBetween(Aqb, Ab, previous).to(type), keptW = decayBetween(Cqb, Cb, previous).to(type);
    const at::Tensor att = keyedAttention(qb, xb, keyW, d.keyVaries); // [B, t, s]
    at::Tensor o = d.keptVaries ? (att.unsqueeze(-1) * keptW * yb.unsqueeze(1)).sum(2)
                                : at::matmul(att * keptW.squeeze(-1), yb);
    if (r > 0) { // the earlier blocks, through step r − 1
      const at::Tensor qt = qb * Aqb.exp().to(type);
      const at::Tensor xt = rowsOf(x, 0, r) * (Aref - rowsOf(cum.A, 0, r)).exp().to(type);
      const at::Tensor yt = rowsOf(y, 0, r) * (Cref - rowsOf(cum.C, 0, r)).exp().to(type);
      o = o + at::matmul(at::matmul(qt, xt.transpose(1, 2)), yt) * Cqb.exp().to(type);
    }
    blocks.push_back(o);
  }
  return at::cat(blocks, 1);
}

/// `rs` of one chunk [t0, t0 + L) from state S0 [B, key, kept]; returns S_L.
at::Tensor chunkStep(const at::Tensor &S0, const Oriented &d, std::vector<Readout *> &rs, int64_t t0, int64_t L) {
  const at::Tensor a = d.key.narrow(1, t0, L), c = d.kept.narrow(1, t0, L);
  const at::Tensor A = a.cumsum(1), C = c.cumsum(1); // [B, L, key or 1], [B, L, kept or 1]
  const auto type = S0.scalar_type();
  for (Readout *r : rs) {
    const at::Tensor Aq = r->previous ? A - a : A, Cq = r->previous ? C - c : C;
    const at::Tensor q = r->q.narrow(1, t0, L);
    at::Tensor o = at::matmul(q * Aq.exp().to(type), S0) * Cq.exp().to(type); // from S0
    for (const auto &[x, y] : d.writes)
      o = o + withinChunk(q, x.narrow(1, t0, L), y.narrow(1, t0, L), {Aq, A, Cq, C}, d, r->previous);
    r->pieces.push_back(o * r->h.narrow(1, t0, L));
  }
  const at::Tensor AL = A.select(1, L - 1), CL = C.select(1, L - 1); // [B, key], [B, kept]
  at::Tensor S = S0 * (AL.unsqueeze(2) + CL.unsqueeze(1)).exp().to(type);
  for (const auto &[x, y] : d.writes) {
    const at::Tensor xs = x.narrow(1, t0, L) * (AL.unsqueeze(1) - A).exp().to(type);
    const at::Tensor ys = y.narrow(1, t0, L) * (CL.unsqueeze(1) - C).exp().to(type);
    S = S + at::matmul(xs.transpose(1, 2), ys);
  }
  return S;
}

/// The WY system's two unit lower-triangular matrices: I + tril(diag(β) K Kᵀ, −1)
/// (for W) and the same with Γ (for Û), [B, L, L].
std::pair<at::Tensor, at::Tensor> deltaSystems(const at::Tensor &G, const at::Tensor &Kc, const at::Tensor &bc) {
  const int64_t L = Kc.size(1);
  const at::Tensor strictly = decayBetween(G, G, /*strict=*/true).squeeze(-1).to(Kc.scalar_type()); // Γ_ts, s < t
  const at::Tensor below = at::ones({L, L}, Kc.options()).tril(-1);
  const at::Tensor KK = at::matmul(Kc, Kc.transpose(1, 2)); // [B, L, L]
  const at::Tensor A0 = bc * KK * below, eye = at::eye(L, Kc.options());
  return {eye + A0, eye + A0 * strictly};
}

std::pair<at::Tensor, at::Tensor> deltaWY(const at::Tensor &G, const at::Tensor &Kc, const at::Tensor &bc,
                                          const at::Tensor &Xc) {
  const auto [forW, forU] = deltaSystems(G, Kc, bc);
  return {at::linalg_solve_triangular(forW, bc * Kc, false, true, true),
          at::linalg_solve_triangular(forU, Xc, false, true, true)};
}

/// The delta rule's state in its right form M [dv, dk] (S, or Sᵀ when the
/// correction contracts rows), M_t = γ_t M_{t−1}(I − β_t k_t k_tᵀ) + x_t k_tᵀ,
/// chunk by chunk in the WY/UT representation (Yang et al. 2024, "Parallelizing
/// Linear Transformers with the Delta Rule over Sequence Length", §3; the gated
/// form: Yang, Kautz and Hatamizadeh 2024, "Gated Delta Networks", §3). With
/// Γ_ts = γ_t / γ_s (s ≤ t, cumulative decays within the chunk, ≤ 1):
///   (I + tril(diag(β) K Kᵀ, −1)) W = diag(β) K
///   (I + tril(diag(β) (Γ ⊙ K Kᵀ), −1)) Û = X,        Ũ = Û − γ ⊙ (W M_0ᵀ)
///   o_t = γ_t M_0 q_t + Σ_{s≤t} Γ_ts (k_sᵀ q_t) ũ_s,   M_L = γ_L M_0 + Σ_s Γ_Ls ũ_s k_sᵀ
/// (unit lower-triangular solves: `deltaWY` gives W and Û). Oriented here as
/// S_or = Mᵀ [B, dk, dv].
at::Tensor deltaChunkStep(const at::Tensor &S0, const at::Tensor &g, const at::Tensor &K, const at::Tensor &beta,
                          const at::Tensor &X, std::vector<Readout *> &rs, int64_t t0, int64_t L) {
  const auto type = S0.scalar_type();
  const at::Tensor gc = g.narrow(1, t0, L), G = gc.cumsum(1); // [B, L, 1], double
  const at::Tensor Kc = K.narrow(1, t0, L), bc = beta.narrow(1, t0, L), Xc = X.narrow(1, t0, L);
  const auto [W, U] = deltaWY(G, Kc, bc, Xc);
  const at::Tensor Ut = U - G.exp().to(type) * at::matmul(W, S0); // [B, L, dv]
  for (Readout *r : rs) {
    const at::Tensor Gq = r->previous ? G - gc : G, q = r->q.narrow(1, t0, L);
    const at::Tensor weights = decayBetween(Gq, G, r->previous).squeeze(-1).to(type); // Γ, s ≤ t (s < t)
    at::Tensor o = Gq.exp().to(type) * at::matmul(q, S0) + at::matmul(at::matmul(q, Kc.transpose(1, 2)) * weights, Ut);
    r->pieces.push_back(o * r->h.narrow(1, t0, L));
  }
  const at::Tensor GL = G.narrow(1, L - 1, 1); // [B, 1, 1]
  return GL.exp().to(type) * S0 + at::matmul(Kc.transpose(1, 2), (GL - G).exp().to(type) * Ut);
}

/// The delta rule's inputs for all steps: keys K [B, T, dk], β [B, T, 1]
/// and the writes' value sides X [B, T, dv] (each write x_t k_tᵀ).
struct DeltaSteps {
  at::Tensor K, beta, X;
};
DeltaSteps deltaSteps(const AllSteps &all, const graph::ChunkState &plan, const StateSteps &s,
                      const at::TensorOptions &options) {
  const char key = plan.correctionAxis[0], kept = key == 'c' ? 'r' : 'c';
  const std::map<char, int64_t> dims = {{'r', s.m}, {'c', s.n}};
  DeltaSteps d;
  d.K = all.product(plan.key, std::string(1, key), 1.0, dims);
  d.beta = all.product(plan.beta, "", plan.betaCoef, dims).unsqueeze(-1);
  d.X = at::zeros({all.B, all.T, dims.at(kept)}, options);
  for (const ChunkTerm &w : plan.writes) {
    std::vector<ChunkFactor> notKey;
    for (const ChunkFactor &f : w.factors)
      if (f.axes.find(key) == std::string::npos)
        notKey.push_back(f);
    d.X = d.X + all.product(notKey, std::string(1, kept), w.coef, dims);
  }
  return d;
}

/// A state with the delta rule's correction: its readouts (each contracting
/// the key axis), chunk by chunk; returns the last state (as S).
at::Tensor runDeltaState(const AllSteps &all, const graph::ChunkState &plan, const StateSteps &s,
                         std::vector<Readout *> rs, int64_t chunk, const at::TensorOptions &options,
                         const std::string &name) {
  const char key = plan.correctionAxis[0];
  TORCH_CHECK(!s.rowDecay && !s.columnDecay, "state '", name, "': the delta rule's chunked form takes a scalar decay");
  for (Readout *r : rs)
    TORCH_CHECK(r->rowsKept == (key == 'c'), "state '", name, "' is read along its keys: no chunked form");
  const DeltaSteps d = deltaSteps(all, plan, s, options);
  at::Tensor S = at::zeros({all.B, d.K.size(2), d.X.size(2)}, options);
  for (int64_t t0 = 0; t0 < all.T; t0 += chunk)
    S = deltaChunkStep(S, s.g, d.K, d.beta, d.X, rs, t0, std::min(chunk, all.T - t0));
  return key == 'c' ? S.transpose(1, 2) : S;
}

/// c[b, t, i, :] += a readout's contribution from step i's writes: the decay
/// family's h_t ⊙ Σ_w (Σ_k q_t[k] x_i[k] e^{A_t[k]−A_i[k]}) (y_i ⊙ e^{C_t−C_i}).
at::Tensor decayContributions(const Readout &r, const Oriented &d) {
  const auto type = r.q.scalar_type();
  const at::Tensor A = d.key.cumsum(1), C = d.kept.cumsum(1);
  const at::Tensor Aq = r.previous ? A - d.key : A, Cq = r.previous ? C - d.kept : C;
  const at::Tensor keyW = decayBetween(Aq, A, r.previous).to(type), keptW = decayBetween(Cq, C, r.previous).to(type);
  at::Tensor c;
  for (const auto &[x, y] : d.writes) {
    const at::Tensor att = keyedAttention(r.q, x, keyW, d.keyVaries);               // [B, t, i]
    const at::Tensor term = att.unsqueeze(-1) * keptW * y.unsqueeze(1);                       // [B, t, i, kept]
    c = c.defined() ? c + term : term;
  }
  return c * r.h.unsqueeze(2);
}

/// The delta rule's, the whole sequence one chunk from S = 0: o_t = Σ_s Γ_ts
/// (k_sᵀ q_t) û_s with Û = (I + A)⁻¹ X, so step i's write x_i reaches o_t with
/// the effective attention M = (tril(Q Kᵀ) ⊙ Γ)(I + A)⁻¹: c_{t,i} = h_t ⊙ M_ti x_i.
/// (I + A)⁻¹ carries the key-removal of the steps between i and t.
at::Tensor deltaContributions(const Readout &r, const StateSteps &s, const DeltaSteps &d) {
  const auto type = r.q.scalar_type();
  const at::Tensor G = s.g.cumsum(1), Gq = r.previous ? G - s.g : G;
  const at::Tensor forU = deltaSystems(G, d.K, d.beta).second;
  const at::Tensor inverse = at::linalg_solve_triangular(forU, at::eye(forU.size(1), forU.options()).expand_as(forU),
                                                         false, true, true);
  const at::Tensor att = at::matmul(r.q, d.K.transpose(1, 2)) * decayBetween(Gq, G, r.previous).squeeze(-1).to(type);
  return at::matmul(att, inverse).unsqueeze(-1) * d.X.unsqueeze(1) * r.h.unsqueeze(2); // [B, t, i, dv]
}
} // namespace

std::vector<at::Tensor> scanContributions(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                          const graph::ChunkPlan &plan) {
  const AllSteps all(inputs, scan, plan);
  Prepared p = prepare(all, scan, plan, inputs.at(0).options());
  const std::vector<StateSteps> &states = p.states;
  const std::vector<at::Tensor> &own = p.free;
  const std::vector<Readout> &readouts = p.readouts;
  std::vector<at::Tensor> out;
  for (const at::Tensor &o : own) { // [B, T, ...] -> [B, T, T, n]: a step's free terms are its own
    const at::Tensor flat = o.reshape({all.B, all.T, -1});
    out.push_back(at::diag_embed(flat.transpose(1, 2)).permute({0, 2, 3, 1}));
  }
  std::vector<std::optional<DeltaSteps>> delta(states.size()); // a corrected state's inputs, once
  for (const Readout &r : readouts) {
    const StateSteps &s = states[r.state];
    const graph::ChunkState &ps = plan.states[r.state];
    if (!ps.correctionAxis.empty() && !delta[r.state])
      delta[r.state] = deltaSteps(all, ps, s, inputs.at(0).options());
    const at::Tensor c = ps.correctionAxis.empty() ? decayContributions(r, orient(s, r.rowsKept, all.B, all.T))
                                                   : deltaContributions(r, s, *delta[r.state]);
    out[r.emit] = out[r.emit] + c; // [B, t, i, kept]
  }
  for (size_t j = 0; j < out.size(); ++j) {
    std::vector<int64_t> shape = own[j].sizes().vec();
    shape.insert(shape.begin() + 2, all.T);
    out[j] = out[j].reshape(shape);
  }
  return out;
}

std::optional<graph::ChunkPlan> chunkPlanOf(const graph::Node &scan) {
  std::optional<graph::ChunkPlan> plan;
  const std::string problem = readChunkPlan(scan, plan);
  TORCH_CHECK(problem.empty(), problem);
  return plan;
}

std::string readChunkPlan(const graph::Node &scan, std::optional<graph::ChunkPlan> &out) {
  out.reset();
  auto it = scan.attrs.find("chunk_plan");
  if (it == scan.attrs.end() || it->second.s.empty())
    return "";
  graph::ChunkPlan plan;
  if (std::string problem = graph::chunkPlanFromJson(it->second.s, plan); !problem.empty())
    return "scan '" + scan.name + "': " + problem;
  const size_t numStates = scan.bodyArgs.size() - scan.inputs.size();
  std::set<std::string> nodes;
  for (const graph::Node &n : scan.body)
    nodes.insert(n.name);
  auto known = [&](const ChunkFactor &f) {
    if (f.value.size() > 1 && f.value[0] == '#' && f.value.find_first_not_of("0123456789", 1) == std::string::npos)
      return std::stoul(f.value.substr(1)) < scan.bodyArgs.size() && std::stoul(f.value.substr(1)) >= numStates;
    return nodes.count(f.value) > 0;
  };
  std::vector<const std::vector<ChunkFactor> *> lists;
  for (const graph::ChunkState &st : plan.states) {
    lists.insert(lists.end(), {&st.decay, &st.beta, &st.key});
    for (const ChunkTerm &w : st.writes)
      lists.push_back(&w.factors);
  }
  for (const std::vector<ChunkTerm> &e : plan.emits)
    for (const ChunkTerm &t : e) {
      lists.push_back(&t.factors);
      if (t.state >= static_cast<int>(plan.states.size()))
        return "scan '" + scan.name + "': its chunk plan reads state " + std::to_string(t.state) + " of " +
               std::to_string(plan.states.size());
    }
  for (const std::vector<ChunkFactor> *l : lists)
    for (const ChunkFactor &f : *l)
      if (!known(f))
        return "scan '" + scan.name + "': its chunk plan names '" + f.value + "', not a step input or node of it";
  for (const std::string &n : plan.freeNodes)
    if (!nodes.count(n))
      return "scan '" + scan.name + "': its chunk plan names '" + n + "', not a node of its step";
  if (plan.states.size() != numStates || plan.emits.size() != scan.shapes.size())
    return "scan '" + scan.name + "': its chunk plan has " + std::to_string(plan.states.size()) + " states and " +
           std::to_string(plan.emits.size()) + " emitted values for the step's " + std::to_string(numStates) +
           " and " + std::to_string(scan.shapes.size());
  out = std::move(plan);
  return "";
}

std::vector<at::Tensor> runScanChunked(const std::vector<at::Tensor> &inputs, const graph::Node &scan,
                                       const graph::ChunkPlan &plan, int64_t chunk,
                                       std::vector<at::Tensor> *finalStates) {
  TORCH_CHECK(chunk >= 1, "scan '", scan.name, "': chunk size ", chunk, " (at least 1)");
  const AllSteps all(inputs, scan, plan);
  // Each emitted value: its free terms now, its readouts chunk by chunk.
  Prepared p = prepare(all, scan, plan, inputs.at(0).options());
  const std::vector<StateSteps> &states = p.states;
  std::vector<at::Tensor> &out = p.free;
  std::vector<Readout> &readouts = p.readouts;
  for (size_t k = 0; k < states.size(); ++k) {
    const StateSteps &s = states[k];
    if (!plan.states[k].correctionAxis.empty()) {
      std::vector<Readout *> rs;
      for (Readout &r : readouts)
        if (r.state == k)
          rs.push_back(&r);
      at::Tensor last = runDeltaState(all, plan.states[k], s, rs, chunk, inputs.at(0).options(), scan.bodyArgs[k].name);
      if (finalStates)
        finalStates->push_back(last);
      continue;
    }
    // Oriented so that the rows are the key axis of each readout: those that
    // keep S's rows see Sᵀ (and the decays and writes swapped).
    for (bool transposed : {false, true}) {
      std::vector<Readout *> rs;
      for (Readout &r : readouts)
        if (r.state == k && r.rowsKept == transposed)
          rs.push_back(&r);
      if (rs.empty() && (transposed || !finalStates))
        continue;
      const Oriented d = orient(s, transposed, all.B, all.T);
      at::Tensor S = at::zeros({all.B, transposed ? s.n : s.m, transposed ? s.m : s.n}, inputs.at(0).options());
      for (int64_t t0 = 0; t0 < all.T; t0 += chunk)
        S = chunkStep(S, d, rs, t0, std::min(chunk, all.T - t0));
      if (finalStates && !transposed)
        finalStates->push_back(S);
    }
  }
  for (Readout &r : readouts) {
    at::Tensor o = at::cat(r.pieces, 1); // [B, T, kept]
    out[r.emit] = out[r.emit] + o.reshape(out[r.emit].sizes());
  }
  return out;
}

} // namespace mixc::rt

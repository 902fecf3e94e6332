//===- Primitives.h - LibTorch implementations of the mix ops ---*- C++ -*-===//
//
// One function per primitive of the DSL, on LibTorch tensors with autograd.
// Formulas are the ops' descriptions in compiler/include/mix/MixOps.td
// (and protocol §3). The recurrences (selective scan, delta rule) are
// custom autograd functions with hand-written backward passes over raw
// memory: one sequential sweep over T, parallel over the batch.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_RUNTIME_CORE_PRIMITIVES_H
#define MIXC_RUNTIME_CORE_PRIMITIVES_H

#include "abi/Graph.h"

#include <ATen/ATen.h>

namespace mixc::rt {

/// Runs the long conv and the S4D kernel through their plain tensor-op forms
/// (FFT; [H, N, T] complex powers) instead of the hand-written sweeps, so a
/// test or bench can compare both in one process. Off by default.
void setPlainReferences(bool on);
bool plainReferences();

/// Depthwise causal conv: x [B, T, C], w [C, K], b [C] (optional).
at::Tensor causalConv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b);

/// Causal long conv y[b,t,c] = Σ_{s≤t} h[s,c]·x[b,t−s,c]: x [B, T, C], h [L, C]
/// with L ≥ T. Direct (longConvDirect) up to kDirectLongConvMaxT steps on the
/// CPU, by FFT of size 2T (longConvFFT) beyond: the same function, two costs
/// (B·C·T² against B·C·T·log T with a large constant).
at::Tensor longConv(const at::Tensor &x, const at::Tensor &h);
constexpr int64_t kDirectLongConvMaxT = 128;
at::Tensor longConvDirect(const at::Tensor &x, const at::Tensor &h);
at::Tensor longConvFFT(const at::Tensor &x, const at::Tensor &h);

/// H3 shift SSM kernel, the linear cross-correlation K[l] = Σ_m b[m]·c[m+l]
/// of b, c [C, N] (FFTs of size 2N), as a [T, C] filter (zero past N).
at::Tensor shiftKernel(const at::Tensor &b, const at::Tensor &c, int64_t T);

/// S4D-Lin kernel per head, [T, H] (protocol §3.5 step 4): b and c are
/// [H, N, 2] complex (real, imaginary), C̃ = C·B·Δ/(1−ΔA/2).
at::Tensor diagSSMKernel(const at::Tensor &logDt, const at::Tensor &logAReal,
                         const at::Tensor &aImag, const at::Tensor &b, const at::Tensor &c,
                         int64_t T);

/// a · b with LibTorch's broadcasting; a product broadcast inside each
/// position (same leading dims, a small inner block: H3's per-head outer
/// product and readout) runs as one loop with a hand-written backward
/// (BroadcastMul.cpp), anything else as at::mul.
at::Tensor broadcastMul(const at::Tensor &a, const at::Tensor &b);

/// x.sum(axis, keepdim); over a small dim with a small block after it
/// (2-8 elements each: H3's readout over a head's dim) as one loop per
/// leading row (SmallSum.cpp), where LibTorch's reduction is ~10 ns an
/// element.
at::Tensor sumOver(const at::Tensor &x, int64_t axis, bool keepdim);

/// diagSSMKernel as one function with a hand-written backward, in double
/// (Vandermonde.cpp): what diagSSMKernel runs unless plain references are on.
at::Tensor s4dKernel(const at::Tensor &logDt, const at::Tensor &logAReal, const at::Tensor &aImag,
                     const at::Tensor &b, const at::Tensor &c, int64_t T);

/// x [B, T, H, M] convolved per head with diagSSMKernel.
at::Tensor diagSSM(const at::Tensor &x, const at::Tensor &logDt, const at::Tensor &logAReal,
                   const at::Tensor &aImag, const at::Tensor &b, const at::Tensor &c);

/// Causal softmax attention, q, k [B, T, K], v [B, T, V]; mask −10000.
at::Tensor softmaxAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v);

/// Based's Taylor feature map [.., F] -> [.., 1 + F + F²].
at::Tensor taylorMap(const at::Tensor &x);

/// Causal normalised linear attention, quadratic (masked-matrix) form.
at::Tensor linearAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                           double eps);

/// Mamba's selective scan: x, delta [B, T, D]; A [D, N]; B, C [B, T, N]; D [D].
at::Tensor selectiveScan(const at::Tensor &x, const at::Tensor &delta, const at::Tensor &A,
                         const at::Tensor &B, const at::Tensor &C, const at::Tensor &D);

/// DeltaNet's delta rule: q, k [B, T, K]; v [B, T, V]; beta [B, T, 1].
at::Tensor deltaRule(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                     const at::Tensor &beta);

/// A recurrence's state read and written inside its sweep: the reference
/// of the generated kernels' mixk_state (abi/KernelAbi.h; layouts in
/// abi/StateLayout.h). Forward only: state interventions run without grad.
struct StateAccess {
  at::Tensor capture;   // when defined: filled with every state [B, T, S] (the state handed on)
  at::Tensor editPos;   // when defined: [B] i64, the step after which row b's state is edited (−1: none)
  at::Tensor editValue; // [B, S] f32: the new state, or what is added to it
  at::Tensor editAdd;   // [B] i32: 1 adds editValue[b], 0 replaces the state by it
  at::Tensor editRange; // optional [B, 2] i64: only floats [first, first + count) of row b's state
                        // are edited (one state of a scan's); undefined: all S
  at::Tensor editReader; // optional [B] i32, MIXK_EDIT_* (abi/KernelAbi.h): the reader of the state
                         // row b's edit reaches, the next step or the output at the step (an edge
                         // out of a built-in recurrence's state); undefined: both
};

/// The recurrences with a StateAccess, as sequential sweeps over T (linear
/// attention in its recurrent form: S_t = S_{t−1} + φk_t v_tᵀ, z_t = z_{t−1} + φk_t,
/// y_t = φq_tᵀ S_t / (φq_t·z_t + eps)).
at::Tensor selectiveScan(const at::Tensor &x, const at::Tensor &delta, const at::Tensor &A,
                         const at::Tensor &B, const at::Tensor &C, const at::Tensor &D,
                         const StateAccess &access);
at::Tensor deltaRule(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                     const at::Tensor &beta, const StateAccess &access);
at::Tensor linearAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double eps,
                           const StateAccess &access);

/// probe[:, t] − its detached copy: zero in value, so adding it to a value
/// changes nothing, while the gradient reaching the sum reaches `probe` at
/// step t (attribution's straight-through probes, in scans and recurrences).
at::Tensor probeTerm(const at::Tensor &probe, int64_t t);

/// Attribution's probes of a built-in recurrence's state ([B, T, S] each,
/// in abi/StateLayout.h's layout, equal to the states the sweep hands on;
/// undefined: none): at every step t the state the output reads is
/// s_t + (output_t + both_t) − their detached copies, and the state handed
/// on s_t + (next_t + both_t) − theirs, which changes no value, so the
/// gradient reaching each reader reaches its probe.
struct StateProbes {
  at::Tensor next, output, both;
};

/// The recurrence of node `n` as a loop of LibTorch ops over T (autograd
/// through every step, to its inputs and its probes): slow, for attribution
/// only; its values are the sweeps' above (tested).
at::Tensor probedRecurrence(const graph::Node &n, const std::vector<at::Tensor> &in, const StateProbes &probes);

/// Node `n`, an op with an explicit recurrent state (abi/OpRegistry.h's
/// hasState), on its inputs in ODS order; with `access`, its StateAccess
/// sweep. The interpreter runs every such op through this one entry.
at::Tensor runRecurrence(const graph::Node &n, const std::vector<at::Tensor> &in, const StateAccess *access);

at::Tensor rmsNorm(const at::Tensor &x, const at::Tensor &w, double eps);
/// x · rsqrt(Σx² + eps) over the last dim (as fla's l2norm).
at::Tensor l2Norm(const at::Tensor &x, double eps);

} // namespace mixc::rt

#endif

/*===- KernelAbi.h - the calling convention of generated kernels -*- C -*-===//
 *
 * One fused region of a compiled model becomes three C functions in a
 * generated shared library (compiler/lib/CodeGen, compiled by
 * runtime/kernels/KernelBuild):
 *
 *   int64_t <sym>_saved(const int64_t *dims);  floats kept from forward to backward
 *   void    <sym>_forward(const mixk_args *);
 *   void    <sym>_backward(const mixk_args *);
 *
 * and the library as a whole exports mixk_abi_version(), mixk_target() and
 *
 *   const char *mixk_graph_digest(void);  graphDigest (abi/Graph.h) of the
 *                                          graph its kernels were generated for
 *
 * The runtime runs a library only with the graph of that digest: kernels of
 * another model or width, or a graph.json edited after compiling, index
 * memory by sizes the other side does not have.
 *
 * `dims` are the sizes of the region's leading dynamic dimensions ([B, T]
 * for most regions, [T] for filters). Every tensor is contiguous f32, in
 * host memory for the CPU library and device memory for the CUDA one. The
 * backward *adds* into `gin` (the caller zeroes it); a missing output
 * gradient is passed as zeros. Plain C: this header is included by the
 * runtime and pasted into every generated source, so it is all they share.
 *
 *===----------------------------------------------------------------------===*/
#ifndef MIXC_ABI_KERNELABI_H
#define MIXC_ABI_KERNELABI_H

#include <stdint.h>

#define MIXK_ABI_VERSION 7

/* int mixk_target(void): which memory the library's kernels work on. */
#define MIXK_TARGET_CPU 0
#define MIXK_TARGET_CUDA 1

/* State interventions (a `state_edit` of the region's recurrence, forward
 * only; the backward of an edited forward is not defined). S is the
 * anchor's state size per row, laid out as its op's `stateLayout` in
 * MixOps.td says (abi/StateLayout.h reads it; e.g. [D, N], s_t per
 * channel); a scan's: each declared state in order, [B, ...] each.
 * A scan applies an edit to the state step edit_pos[b] hands on (its output
 * at that step is the unedited step's), as its reference loop does
 * (runtime/core/Scan.h); the built-in recurrences' output at the step
 * already reads the edited state. With edit_reader (built-in recurrences
 * only: an edge out of the state, docs/protocol.md §6.3), row b's edit
 * reaches one reader of its state: MIXK_EDIT_NEXT_STEP, the state handed on
 * (the output at that step reads the unedited state), or MIXK_EDIT_OUTPUT,
 * the output at that step (the unedited state is handed on); a capture
 * records the state handed on.
 * Pointers are in the kernels' memory (host or device). */
#define MIXK_EDIT_BOTH 0
#define MIXK_EDIT_NEXT_STEP 1
#define MIXK_EDIT_OUTPUT 2
typedef struct mixk_state {
  float *capture;             /* when set: every state, [B, T, S] */
  const int64_t *edit_pos;    /* when set, [B]: after step edit_pos[b] (−1: none) */
  const float *edit_value;    /*   row b's state becomes edit_value[b] ([B, S]) */
  const int32_t *edit_add;    /*   or, where edit_add[b] != 0, state + edit_value[b] */
  const int64_t *edit_range;  /*   when set, [B, 2]: only floats [first, first + count) of row b's
                                   state are edited (one state of a scan); else all S */
  const int32_t *edit_reader; /*   when set, [B]: MIXK_EDIT_*, the reader row b's edit reaches;
                                   else both */
} mixk_state;

typedef struct mixk_args {
  int64_t dims[4];          /* the leading dynamic sizes, e.g. B, T */
  int32_t ndims;
  int32_t threads;          /* OpenMP threads to use */
  const float *const *in;   /* region inputs, in region order */
  float *const *out;        /* forward: region outputs */
  float *saved;             /* <sym>_saved(dims) floats, written by forward */
  const float *const *gout; /* backward: one gradient per output */
  float *const *gin;        /* backward: one gradient per input, accumulated */
  void *stream;             /* CUDA kernels: the cudaStream_t to launch on (CPU: unused) */
  const mixk_state *state;  /* forward: the anchor's state interventions, or NULL */
} mixk_args;

#endif

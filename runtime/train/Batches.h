//===- Batches.h - task data as LibTorch tensors ----------------*- C++ -*-===//
#ifndef MIXC_RUNTIME_TRAIN_BATCHES_H
#define MIXC_RUNTIME_TRAIN_BATCHES_H

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace mixc::train {

/// Rows [from, to) of a row-major int32 table `width` wide, as int64
/// [to − from, width] (a copy: the data set's vectors stay untouched).
inline at::Tensor int64Rows(const std::vector<int32_t> &v, int64_t from, int64_t to, int64_t width) {
  return at::from_blob(const_cast<int32_t *>(v.data()) + from * width, {to - from, width},
                       at::TensorOptions().dtype(at::kInt))
      .to(at::kLong);
}

/// Entries [from, to) of a per-document int32 column, as int64 [to − from].
inline at::Tensor int64Slice(const std::vector<int32_t> &v, int64_t from, int64_t to) {
  return int64Rows(v, from, to, 1).view({-1});
}

} // namespace mixc::train

#endif

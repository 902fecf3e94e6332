//===- Safetensors.h - the safetensors file format, read and written -*- C++ -*-===//
//
// The layout PyTorch users load with `safetensors.torch.load_file` (and any
// reader written from its description):
//
//   8 bytes    N, the header's length, unsigned little-endian
//   N bytes    a JSON object: "__metadata__" (string -> string), and per
//              tensor  name -> {"dtype": "F32"|"I64"|..., "shape": [...],
//                               "data_offsets": [begin, end]}
//              padded with spaces to a multiple of 8 bytes
//   the data   each tensor's bytes, row-major, little-endian, at its
//              offsets (relative to the end of the header), in file order
//
// Written by mixc itself (no Python needed); checked on reading: offsets
// inside the file, contiguous and non-overlapping, sizes matching shape ×
// dtype.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_SAFETENSORS_H
#define MIXC_SUPPORT_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mixc::support {

struct StoredTensor {
  std::string name;
  std::string dtype; // "F32", "I64", ...: the format's names
  std::vector<int64_t> shape;
  std::string bytes; // row-major, little-endian
};

/// Bytes per element of a dtype name; 0 for one this reader does not know.
int64_t dtypeSize(const std::string &dtype);

/// Writes `tensors` (in order) and `metadata` to `path` atomically.
bool writeSafetensors(const std::string &path, const std::vector<StoredTensor> &tensors,
                      const std::map<std::string, std::string> &metadata, std::string &error);

/// The tensors and metadata of a whole safetensors file's bytes `file`;
/// false with `error` naming `path` and the problem: a header that is not
/// one JSON object of unique names, offsets that are not two non-negative
/// integers, or data that is not the tensors end to end (overlaps, gaps,
/// trailing bytes) is refused.
bool parseSafetensors(const std::string &file, const std::string &path, std::vector<StoredTensor> &tensors,
                      std::map<std::string, std::string> &metadata, std::string &error);

/// Reads a whole file; false with `error` naming the file and the problem.
bool readSafetensors(const std::string &path, std::vector<StoredTensor> &tensors,
                     std::map<std::string, std::string> &metadata, std::string &error);

} // namespace mixc::support

#endif

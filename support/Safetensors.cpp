//===- Safetensors.cpp - the safetensors file format, read and written -----===//
#include "support/Safetensors.h"
#include "support/TextFile.h"
#include "support/AtomicWrite.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <tuple>
#include <set>
#include <iterator>
#include <limits>

namespace mixc::support {

int64_t dtypeSize(const std::string &dtype) {
  static const std::map<std::string, int64_t> sizes = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},
                                                       {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
                                                       {"U8", 1},  {"BOOL", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace {
/// Elements of `shape`, or -1 if a dimension is negative or the count overflows.
int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / d))
      return -1;
    n *= d;
  }
  return n;
}
} // namespace

bool writeSafetensors(const std::string &path, const std::vector<StoredTensor> &tensors,
                      const std::map<std::string, std::string> &metadata, std::string &error) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const StoredTensor &t : tensors) {
    const int64_t n = elements(t.shape), size = dtypeSize(t.dtype);
    if (n < 0 || size == 0 || static_cast<uint64_t>(n * size) != t.bytes.size()) {
      error = "tensor '" + t.name + "': " + std::to_string(t.bytes.size()) + " bytes do not hold its shape and dtype " +
              t.dtype;
      return false;
    }
    if (t.name == "__metadata__" || header.contains(t.name)) {
      error = "tensor name '" + t.name + "' is reserved or used twice";
      return false;
    }
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[i] = static_cast<char>((static_cast<uint64_t>(json.size()) >> (8 * i)) & 0xff);
  file += json;
  for (const StoredTensor &t : tensors)
    file += t.bytes;
  return writeFileAtomically(path, file, error);
}

bool readSafetensors(const std::string &path, std::vector<StoredTensor> &tensors,
                     std::map<std::string, std::string> &metadata, std::string &error) {
  // Missing, a directory, a FIFO, unreadable: said with the path (an
  // ifstream on a directory threw from inside the read).
  std::string file;
  if (!readWholeFile(path, file, error, size_t(1) << 36))
    return false;
  return parseSafetensors(file, path, tensors, metadata, error);
}

bool parseSafetensors(const std::string &file, const std::string &path, std::vector<StoredTensor> &tensors,
                      std::map<std::string, std::string> &metadata, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = path + ": not a safetensors file: " + why;
    return false;
  };
  if (file.size() < 8)
    return fail("shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(file[i]);
  if (n > file.size() - 8)
    return fail("the header length " + std::to_string(n) + " runs past the end of the file");
  const size_t dataStart = 8 + n, dataSize = file.size() - dataStart;
  nlohmann::json header;
  std::set<std::string> seen, duplicates; // JSON keeps the last of two equal keys: refuse them instead
  try {
    header = nlohmann::json::parse(file.substr(8, n), [&](int depth, nlohmann::json::parse_event_t event,
                                                          nlohmann::json &parsed) {
      if (depth == 1 && event == nlohmann::json::parse_event_t::key && !seen.insert(parsed.get<std::string>()).second)
        duplicates.insert(parsed.get<std::string>());
      return true;
    });
  } catch (const std::exception &e) {
    return fail(std::string("the header is not JSON (") + e.what() + ")");
  }
  if (!duplicates.empty())
    return fail("the header names '" + *duplicates.begin() + "' twice");
  if (!header.is_object())
    return fail("the header is not a JSON object");
  tensors.clear();
  metadata.clear();
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> spans; // [from, to) of each tensor's bytes
  try {
    for (auto &[name, v] : header.items()) {
      if (name == "__metadata__") {
        for (auto &[k, s] : v.items())
          metadata[k] = s.get<std::string>();
        continue;
      }
      StoredTensor t;
      t.name = name;
      t.dtype = v.at("dtype").get<std::string>();
      t.shape = v.at("shape").get<std::vector<int64_t>>();
      const nlohmann::json &raw = v.at("data_offsets");
      if (!raw.is_array() || raw.size() != 2 || !raw[0].is_number_unsigned() || !raw[1].is_number_unsigned())
        return fail("tensor '" + name + "' has data_offsets that are not two non-negative integers");
      auto offsets = raw.get<std::vector<uint64_t>>();
      const int64_t count = elements(t.shape), size = dtypeSize(t.dtype);
      if (size == 0)
        return fail("tensor '" + name + "' has the unknown dtype " + t.dtype);
      if (count < 0)
        return fail("tensor '" + name + "' has an invalid shape");
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > dataSize)
        return fail("tensor '" + name + "' has data offsets outside the file");
      if (offsets[1] - offsets[0] != static_cast<uint64_t>(count) * static_cast<uint64_t>(size))
        return fail("tensor '" + name + "' has " + std::to_string(offsets[1] - offsets[0]) + " bytes for " +
                    std::to_string(count) + " " + t.dtype + " elements");
      t.bytes = file.substr(dataStart + offsets[0], offsets[1] - offsets[0]);
      spans.push_back({offsets[0], offsets[1], name});
      tensors.push_back(std::move(t));
    }
  } catch (const std::exception &e) {
    return fail(std::string("a malformed header entry (") + e.what() + ")");
  }
  // The format's data is the tensors end to end: no overlap (two tensors
  // reading the same bytes), no gap and nothing after the last.
  std::sort(spans.begin(), spans.end());
  uint64_t end = 0;
  for (const auto &[from, to, name] : spans) {
    if (from != end)
      return fail("tensor '" + name + "' starts at byte " + std::to_string(from) + " of the data, not at " +
                  std::to_string(end) + (from < end ? " (it overlaps the tensor before it)" : " (a gap before it)"));
    end = to;
  }
  if (end != dataSize)
    return fail(std::to_string(dataSize - end) + " bytes after the last tensor's data");
  return true;
}

} // namespace mixc::support

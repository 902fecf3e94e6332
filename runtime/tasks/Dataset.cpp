//===- Dataset.cpp - token documents, role positions and the data cache -----===//
#include "runtime/tasks/Dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace mixc::tasks {

int64_t Dataset::maxLength(int64_t from, int64_t to) const {
  int32_t m = 0;
  for (int64_t i = from; i < to; ++i)
    m = std::max(m, length[i]);
  return m;
}

void Dataset::append(const std::vector<int32_t> &doc, int32_t readoutPos, int32_t answer,
                     int32_t key, int32_t value, int32_t query, int32_t divider) {
  const int64_t len = static_cast<int64_t>(doc.size());
  if (len > seqLen) { // widen the rows written so far
    std::vector<int32_t> wider(static_cast<size_t>(size() * len), kPad);
    for (int64_t i = 0; i < size(); ++i)
      std::copy_n(tokens.begin() + i * seqLen, seqLen, wider.begin() + i * len);
    tokens.swap(wider);
    seqLen = len;
  }
  tokens.insert(tokens.end(), doc.begin(), doc.end());
  tokens.insert(tokens.end(), static_cast<size_t>(seqLen - len), kPad);
  length.push_back(static_cast<int32_t>(len));
  readout.push_back(readoutPos);
  target.push_back(answer);
  keyPos.push_back(key);
  valuePos.push_back(value);
  queryPos.push_back(query);
  dividerPos.push_back(divider);
}

namespace {
template <typename T>
void writeVec(std::ofstream &out, const std::vector<T> &v) {
  uint64_t n = v.size();
  out.write(reinterpret_cast<const char *>(&n), sizeof n);
  out.write(reinterpret_cast<const char *>(v.data()), static_cast<std::streamsize>(n * sizeof(T)));
}

template <typename T>
bool readVec(std::ifstream &in, std::vector<T> &v) {
  uint64_t n = 0;
  if (!in.read(reinterpret_cast<char *>(&n), sizeof n) || n > (1ull << 32))
    return false;
  v.resize(n);
  return static_cast<bool>(in.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(n * sizeof(T))));
}

void writeSet(std::ofstream &out, const Dataset &d) {
  int64_t header[4] = {d.seqLen, d.vocabSize, d.corruptLow, d.corruptHigh};
  out.write(reinterpret_cast<const char *>(header), sizeof header);
  for (const auto *v : {&d.tokens, &d.length, &d.readout, &d.target, &d.keyPos, &d.valuePos,
                        &d.queryPos, &d.dividerPos})
    writeVec(out, *v);
}

/// Reads a set as writeSet wrote it; what it holds (sizes included) is
/// checked by holdsOnlyValidDocuments, which loadCache applies to each set.
bool readSet(std::ifstream &in, Dataset &d) {
  int64_t header[4];
  if (!in.read(reinterpret_cast<char *>(header), sizeof header))
    return false;
  d.seqLen = header[0], d.vocabSize = header[1];
  d.corruptLow = static_cast<int32_t>(header[2]), d.corruptHigh = static_cast<int32_t>(header[3]);
  for (auto *v : {&d.tokens, &d.length, &d.readout, &d.target, &d.keyPos, &d.valuePos,
                  &d.queryPos, &d.dividerPos})
    if (!readVec(in, *v))
      return false;
  return true;
}
} // namespace

bool holdsOnlyValidDocuments(const Dataset &d, int64_t vocabSize) {
  // Sizes first: everything below indexes with them.
  const size_t n = d.target.size();
  if (d.vocabSize != vocabSize || d.seqLen < 1 || d.tokens.size() != n * static_cast<size_t>(d.seqLen))
    return false;
  for (const auto *v : {&d.length, &d.readout, &d.keyPos, &d.valuePos, &d.queryPos, &d.dividerPos})
    if (v->size() != n)
      return false;
  // Corruption draws another token than the one it replaces: two at least.
  if (d.corruptLow < 0 || d.corruptHigh > vocabSize || d.corruptHigh - d.corruptLow < 2)
    return false;
  auto token = [&](int64_t t) { return t >= 0 && t < vocabSize; };
  if (!std::all_of(d.tokens.begin(), d.tokens.end(), token) || !std::all_of(d.target.begin(), d.target.end(), token))
    return false;
  for (size_t i = 0; i < n; ++i) {
    const int32_t len = d.length[i];
    auto inside = [&](int32_t p) { return p >= 0 && p < len; };
    if (len < 1 || len > d.seqLen || !inside(d.readout[i]) || !inside(d.keyPos[i]) || !inside(d.valuePos[i]) ||
        !inside(d.queryPos[i]) || !inside(d.dividerPos[i]))
      return false;
  }
  return true;
}

bool loadCache(const std::string &file, const char magic[8], int64_t trainSize, int64_t testSize,
               int64_t vocabSize, TaskData &data) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) // a FIFO or a folder at the cache's name is no cache
    return false;
  std::ifstream in(file, std::ios::binary);
  char m[8];
  const bool ok = in && in.read(m, 8) && std::equal(m, m + 8, magic) && readSet(in, data.train) &&
                  readSet(in, data.test) && in.peek() == std::ifstream::traits_type::eof() &&
                  data.train.size() == trainSize && data.test.size() == testSize &&
                  holdsOnlyValidDocuments(data.train, vocabSize) && holdsOnlyValidDocuments(data.test, vocabSize);
  if (!ok)
    data = TaskData{};
  return ok;
}

void saveCache(const std::string &file, const char magic[8], const TaskData &data) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  std::string tmp = file + ".tmp" + std::to_string(::getpid());
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(magic, 8);
    writeSet(out, data.train);
    writeSet(out, data.test);
    written = static_cast<bool>(out.flush());
  }
  // The cache only saves time: a write that failed (a full disk) leaves no
  // file, never a truncated one under the cache's name.
  if (!written) {
    fs::remove(tmp, ec);
    return;
  }
  fs::rename(tmp, file, ec);
}

} // namespace mixc::tasks

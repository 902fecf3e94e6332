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

bool readSet(std::ifstream &in, Dataset &d) {
  int64_t header[4];
  if (!in.read(reinterpret_cast<char *>(header), sizeof header) || header[0] < 1)
    return false;
  d.seqLen = header[0], d.vocabSize = header[1];
  d.corruptLow = static_cast<int32_t>(header[2]), d.corruptHigh = static_cast<int32_t>(header[3]);
  for (auto *v : {&d.tokens, &d.length, &d.readout, &d.target, &d.keyPos, &d.valuePos,
                  &d.queryPos, &d.dividerPos})
    if (!readVec(in, *v))
      return false;
  size_t n = d.target.size();
  for (const auto *v : {&d.length, &d.readout, &d.keyPos, &d.valuePos, &d.queryPos, &d.dividerPos})
    if (v->size() != n)
      return false;
  return d.tokens.size() == n * static_cast<size_t>(d.seqLen);
}
} // namespace

bool loadCache(const std::string &file, const char magic[8], int64_t trainSize, int64_t testSize,
               TaskData &data) {
  std::ifstream in(file, std::ios::binary);
  char m[8];
  return in && in.read(m, 8) && std::equal(m, m + 8, magic) && readSet(in, data.train) &&
         readSet(in, data.test) && data.train.size() == trainSize && data.test.size() == testSize;
}

void saveCache(const std::string &file, const char magic[8], const TaskData &data) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  std::string tmp = file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(magic, 8);
    writeSet(out, data.train);
    writeSet(out, data.test);
  }
  fs::rename(tmp, file, ec);
}

} // namespace mixc::tasks

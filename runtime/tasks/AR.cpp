#include "runtime/tasks/AR.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

namespace mixc::tasks {

std::string ARConfig::key() const {
  return "ar-v1-kv" + std::to_string(numKV) + "-p" + std::to_string(numPairs) + "-n" +
         std::to_string(trainSize) + "-" + std::to_string(testSize) + "-s" + std::to_string(seed);
}

namespace {
/// `count` distinct draws from [0, range): rejection, cheap when count ≪ range.
std::vector<int32_t> sampleDistinct(std::mt19937_64 &rng, int64_t range, int64_t count) {
  std::vector<int32_t> out;
  std::uniform_int_distribution<int64_t> pick(0, range - 1);
  while (static_cast<int64_t>(out.size()) < count) {
    int32_t v = static_cast<int32_t>(pick(rng));
    if (std::find(out.begin(), out.end(), v) == out.end())
      out.push_back(v);
  }
  return out;
}

Dataset generate(const ARConfig &c, int64_t n, std::mt19937_64 &rng) {
  Dataset d;
  d.seqLen = c.seqLen();
  d.vocabSize = c.vocabSize();
  d.tokens.reserve(n * d.seqLen);
  const int32_t firstKey = kFirstTerminal, firstValue = kFirstTerminal + static_cast<int32_t>(c.keys());
  std::uniform_int_distribution<int64_t> query(0, c.numPairs - 1);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> keys = sampleDistinct(rng, c.keys(), c.numPairs);
    std::vector<int32_t> values = sampleDistinct(rng, c.keys(), c.numPairs);
    int64_t q = query(rng);
    d.tokens.push_back(kBos);
    for (int64_t p = 0; p < c.numPairs; ++p) {
      d.tokens.push_back(firstKey + keys[p]);
      d.tokens.push_back(firstValue + values[p]);
    }
    int32_t divider = static_cast<int32_t>(2 * c.numPairs + 1);
    d.tokens.push_back(kEos);
    d.tokens.push_back(firstKey + keys[q]);
    d.tokens.push_back(firstValue + values[q]);
    d.tokens.push_back(kEos);
    d.keyPos.push_back(static_cast<int32_t>(2 * q + 1));
    d.valuePos.push_back(static_cast<int32_t>(2 * q + 2));
    d.dividerPos.push_back(divider);
    d.queryPos.push_back(divider + 1);
    d.readout.push_back(divider + 1); // logits at the query key predict v_q
    d.target.push_back(firstValue + values[q]);
  }
  return d;
}

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
  for (const auto *v : {&d.tokens, &d.readout, &d.target, &d.keyPos, &d.valuePos, &d.queryPos, &d.dividerPos})
    writeVec(out, *v);
}

bool readSet(std::ifstream &in, Dataset &d, const ARConfig &c) {
  d.seqLen = c.seqLen();
  d.vocabSize = c.vocabSize();
  for (auto *v : {&d.tokens, &d.readout, &d.target, &d.keyPos, &d.valuePos, &d.queryPos, &d.dividerPos})
    if (!readVec(in, *v))
      return false;
  return d.tokens.size() == d.target.size() * static_cast<size_t>(d.seqLen);
}

constexpr char kMagic[8] = {'m', 'i', 'x', 'c', 'A', 'R', '0', '1'};
} // namespace

ARData makeAR(const ARConfig &c, const std::string &cacheDir) {
  namespace fs = std::filesystem;
  fs::path file = cacheDir.empty() ? fs::path() : fs::path(cacheDir) / (c.key() + ".bin");
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    char magic[8];
    ARData data;
    if (in && in.read(magic, 8) && std::equal(magic, magic + 8, kMagic) &&
        readSet(in, data.train, c) && readSet(in, data.test, c) &&
        data.train.size() == c.trainSize && data.test.size() == c.testSize)
      return data;
  }
  std::mt19937_64 rng(c.seed);
  ARData data{generate(c, c.trainSize, rng), generate(c, c.testSize, rng)};
  if (!file.empty()) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    fs::path tmp = file;
    tmp += ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(kMagic, 8);
      writeSet(out, data.train);
      writeSet(out, data.test);
    }
    fs::rename(tmp, file, ec); // a failed cache write only costs a regeneration
  }
  return data;
}

} // namespace mixc::tasks

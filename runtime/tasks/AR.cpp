//===- AR.cpp - Associative Recall data (protocol §1) -----------------------===//
#include "runtime/tasks/AR.h"
#include "runtime/tasks/TaskError.h"

#include <algorithm>
#include <random>

namespace mixc::tasks {

std::string ARConfig::key() const {
  return "ar-v2-kv" + std::to_string(numKV) + "-p" + std::to_string(numPairs) + "-n" +
         std::to_string(trainSize) + "-" + std::to_string(testSize) + "-s" + std::to_string(seed) +
         (queryValue ? "-qvalue" : "");
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
  d.vocabSize = c.vocabSize();
  d.corruptLow = kFirstTerminal; // corruption draws another key (§6)
  d.corruptHigh = kFirstTerminal + static_cast<int32_t>(c.keys());
  d.tokens.reserve(n * c.seqLen());
  const int32_t firstKey = kFirstTerminal, firstValue = kFirstTerminal + static_cast<int32_t>(c.keys());
  std::uniform_int_distribution<int64_t> query(0, c.numPairs - 1);
  std::vector<int32_t> doc;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 4096 == 0)
      pollStop("AR");
    std::vector<int32_t> keys = sampleDistinct(rng, c.keys(), c.numPairs);
    std::vector<int32_t> values = sampleDistinct(rng, c.keys(), c.numPairs);
    int64_t q = query(rng);
    doc.assign(1, kBos);
    for (int64_t p = 0; p < c.numPairs; ++p) {
      doc.push_back(firstKey + keys[p]);
      doc.push_back(firstValue + values[p]);
    }
    const int32_t divider = static_cast<int32_t>(2 * c.numPairs + 1);
    const int32_t k = firstKey + keys[q], v = firstValue + values[q];
    doc.push_back(kEos);
    doc.push_back(c.queryValue ? v : k); // the query
    doc.push_back(c.queryValue ? k : v); // its answer
    doc.push_back(kEos);
    // The logits at the query (divider + 1) predict the answer. The roles
    // stay where the pair stands in context: key 2q+1, value 2q+2.
    d.append(doc, divider + 1, c.queryValue ? k : v, static_cast<int32_t>(2 * q + 1),
             static_cast<int32_t>(2 * q + 2), divider + 1, divider);
  }
  return d;
}

constexpr char kArCacheMagic[8] = {'m', 'i', 'x', 'c', 'A', 'R', '0', '2'};
} // namespace

TaskData makeAR(const ARConfig &c, const std::string &cacheDir) {
  std::string file = cacheDir.empty() ? "" : cacheDir + "/" + c.key() + ".bin";
  TaskData data;
  if (!file.empty() && loadCache(file, kArCacheMagic, c.trainSize, c.testSize, c.vocabSize(), data))
    return data;
  std::mt19937_64 rng(c.seed);
  data.train = generate(c, c.trainSize, rng);
  data.test = generate(c, c.testSize, rng);
  if (!file.empty())
    saveCache(file, kArCacheMagic, data);
  return data;
}

} // namespace mixc::tasks

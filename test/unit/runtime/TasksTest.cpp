// Associative Recall exactly as paper-spec §1.
#include "runtime/tasks/AR.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

using namespace mixc::tasks;

TEST(AR, DefaultsMatchTheSpec) {
  ARConfig c;
  EXPECT_EQ(c.vocabSize(), 8196);
  EXPECT_EQ(c.seqLen(), 37);
  EXPECT_EQ(c.trainSize, 100032);
  EXPECT_EQ(c.testSize, 1024);
  EXPECT_EQ(c.seed, 42u);
}

TEST(AR, DocumentLayout) {
  ARConfig c;
  c.trainSize = 300;
  c.testSize = 50;
  ARData d = makeAR(c, "");
  ASSERT_EQ(d.train.size(), 300);
  ASSERT_EQ(d.test.size(), 50);
  std::set<int32_t> queried;
  for (int64_t i = 0; i < d.train.size(); ++i) {
    const int32_t *doc = &d.train.tokens[i * 37];
    EXPECT_EQ(doc[0], kBos);
    EXPECT_EQ(doc[33], kEos);
    EXPECT_EQ(doc[36], kEos);
    std::set<int32_t> keys, values;
    for (int p = 0; p < 16; ++p) {
      int32_t k = doc[1 + 2 * p], v = doc[2 + 2 * p];
      EXPECT_GE(k, 3);
      EXPECT_LE(k, 4098); // keys k0..k4095 = 3..4098
      EXPECT_GE(v, 4099);
      EXPECT_LE(v, 8194); // values = 4099..8194
      keys.insert(k);
      values.insert(v);
    }
    EXPECT_EQ(keys.size(), 16u) << "keys drawn without replacement";
    EXPECT_EQ(values.size(), 16u) << "values drawn without replacement";
    int32_t q = (d.train.keyPos[i] - 1) / 2;
    EXPECT_EQ(d.train.valuePos[i], d.train.keyPos[i] + 1);
    EXPECT_EQ(doc[34], doc[d.train.keyPos[i]]) << "the query is a key in context";
    EXPECT_EQ(doc[35], doc[d.train.valuePos[i]]) << "the answer is its value";
    EXPECT_EQ(d.train.target[i], doc[35]);
    EXPECT_EQ(d.train.readout[i], 34);
    EXPECT_EQ(d.train.queryPos[i], 34);
    EXPECT_EQ(d.train.dividerPos[i], 33);
    queried.insert(q);
  }
  EXPECT_EQ(queried.size(), 16u) << "every pair index gets queried";
}

TEST(AR, DeterministicAndCached) {
  ARConfig c;
  c.numKV = 64;
  c.numPairs = 4;
  c.trainSize = 100;
  c.testSize = 20;
  std::string dir = (std::filesystem::temp_directory_path() / "mixc-ar-cache-test").string();
  std::filesystem::remove_all(dir);
  ARData a = makeAR(c, dir);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / (c.key() + ".bin")));
  ARData b = makeAR(c, dir); // read back from the cache
  ARData fresh = makeAR(c, "");
  EXPECT_EQ(a.train.tokens, b.train.tokens);
  EXPECT_EQ(a.test.target, b.test.target);
  EXPECT_EQ(a.train.tokens, fresh.train.tokens);
  c.seed = 43;
  EXPECT_NE(makeAR(c, "").train.tokens, a.train.tokens);
  std::filesystem::remove_all(dir);
}

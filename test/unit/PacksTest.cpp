//===- PacksTest.cpp - which cells of a sweep train together ----------------===//
#include "experiments/Packs.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace mixc::experiments;
using Start = PackCandidate::Start;
using Units = std::vector<std::vector<size_t>>;

namespace {
toml::table parse(const std::string &text) { return toml::parse(text); }

PackCandidate fresh(const std::string &key) { return {key, Start::Fresh, ""}; }
} // namespace

TEST(Packs, KeyIgnoresOnlyThePackableSettingsAndTheOutput) {
  const std::string base = "[model]\nfile = \"m.mix\"\n[model.config]\nd = 16\n[task]\nnum_pairs = 2\n";
  const std::string a = packKey(parse(base + "[train]\nlr = 1e-3\nseed = 1\nwarmup = 10\nschedule = \"cosine\"\n"
                                             "early_stop_acc = 0.9\nmax_steps = 100\n[output]\ndir = \"a\"\n"));
  const std::string b = packKey(parse(base + "[train]\nlr = 3e-3\nseed = 2\nmax_steps = 100\n[output]\ndir = \"b\"\n"));
  EXPECT_EQ(a, b);
  // Anything else (the model's width, the task, the step count) separates.
  EXPECT_NE(b, packKey(parse(base + "[train]\nlr = 3e-3\nmax_steps = 200\n")));
  std::string wider = base;
  wider.replace(wider.find("d = 16"), 6, "d = 32");
  EXPECT_NE(b, packKey(parse(wider + "[train]\nlr = 3e-3\nseed = 2\nmax_steps = 100\n")));
}

TEST(Packs, FreshCellsPackByKeyInSweepOrder) {
  const std::vector<PackCandidate> cells = {fresh("A"), fresh("A"), fresh("B"), fresh("A"), fresh("A"), fresh("B")};
  EXPECT_EQ(formPacks(cells, 2), (Units{{0, 1}, {2, 5}, {3, 4}}));
  EXPECT_EQ(formPacks(cells, 3), (Units{{0, 1, 3}, {2, 5}, {4}}));
  EXPECT_EQ(formPacks(cells, 8), (Units{{0, 1, 3, 4}, {2, 5}}));
  EXPECT_EQ(formPacks(cells, 1), (Units{{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(formPacks(cells, 0), (Units{{0}, {1}, {2}, {3}, {4}, {5}}));
}

TEST(Packs, AnInterruptedPackResumesTogetherAndTheRestAlone) {
  const std::string pq = packFileText({"p", "q"});
  const std::vector<PackCandidate> cells = {
      {"A", Start::Resumes, pq}, // member of an interrupted pack
      {"A", Start::Resumes, ""}, // interrupted while training alone
      {"A", Start::Trained, ""}, // trained; its interventions were interrupted
      fresh("A"),
      {"A", Start::Resumes, pq}, // the other member, later in the sweep
      fresh("A"),
  };
  EXPECT_EQ(formPacks(cells, 4), (Units{{0, 4}, {1}, {2}, {3, 5}}));
  // Without packing, every member resumes alone from its own checkpoint.
  EXPECT_EQ(formPacks(cells, 1), (Units{{0}, {1}, {2}, {3}, {4}, {5}}));
}

TEST(Packs, PackFileRoundTrips) {
  const std::vector<std::string> names = {"d16__lr0.001", "d16__lr0.003"};
  EXPECT_EQ(packFileMembers(packFileText(names)), names);
  EXPECT_TRUE(packFileMembers("").empty());
}

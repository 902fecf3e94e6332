//===- Packs.h - which cells of a sweep train together ----------*- C++ -*-===//
//
// `mixc sweep --pack K` trains up to K cells as one pack (`mixc train
// A.toml B.toml ...`, runtime/train/PackedTrainer.cpp) when their configs
// agree in everything but the packable settings (Config.h: train.lr, seed,
// warmup, schedule, early_stop_acc). A pack's members list each other in
// their folders' pack.txt, so that an interrupted pack resumes as the same
// pack (its members' checkpoints are at one step); a cell that trained
// alone before, or whose training has finished, runs alone.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_EXPERIMENTS_PACKS_H
#define MIXC_EXPERIMENTS_PACKS_H

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mixc::experiments {

/// A cell to run, as the packing sees it.
struct PackCandidate {
  std::string key; // packKey of its config: equal keys may share a pack
  enum class Start { Fresh, Resumes, Trained } start = Start::Fresh; // no checkpoint; one; result.toml too
  std::string packedWith; // Resumes: its pack.txt (the members of the pack it stopped in), "" if none
};

/// `config` without the packable settings and [output]: what the runs of a
/// pack must share, as text.
std::string packKey(toml::table config);

/// The candidates (in sweep order) as units to launch, each a list of
/// indices: Fresh cells in packs of up to `k` with equal keys (a pack at
/// the place of its first member), an interrupted pack's members together
/// again (whatever their number), every other cell alone. `k` ≤ 1: every
/// cell alone (an interrupted pack's members each resume from their own
/// checkpoint, which is what a run alone writes).
std::vector<std::vector<size_t>> formPacks(const std::vector<PackCandidate> &cells, int64_t k);

/// pack.txt's text for members `names`, and its members read back.
std::string packFileText(const std::vector<std::string> &names);
std::vector<std::string> packFileMembers(const std::string &text);

} // namespace mixc::experiments

#endif

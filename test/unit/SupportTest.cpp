//===- SupportTest.cpp - support/: processes, locks, atomic files ---------===//
#include "support/AtomicWrite.h"
#include "support/FileLock.h"
#include "support/Process.h"
#include "support/Suggest.h"
#include "support/TextFile.h"
#include "support/Format.h"
#include "support/StepTiming.h"
#include "support/Ticks.h"
#include "support/Plot.h"
#include "support/OutputGuard.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace mixc::support;

namespace {
fs::path scratch(const std::string &name) {
  fs::path p = fs::temp_directory_path() / ("mixc-support-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
} // namespace

TEST(Process, ArgumentsReachTheProgramVerbatim) {
  // Shell syntax in an argument is data: printf prints it back unchanged.
  std::string out, err;
  const std::string tricky = "it's $(echo no) `echo no`; echo no | cat > x";
  int rc = runCapture({"/usr/bin/printf", "%s", tricky}, out, err);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_EQ(out, tricky);
}

TEST(Process, LargeOutputOnBothStreamsDoesNotDeadlock) {
  // 1 MiB to stderr before anything to stdout: a reader that drained stdout
  // first would wait forever once the stderr pipe filled.
  std::string out, err;
  int rc = runCapture({"/bin/sh", "-c", "head -c 1048576 /dev/zero >&2; echo done"}, out, err);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, "done\n");
  EXPECT_EQ(err.size(), 1048576u);
}

TEST(Process, ExitStatusAndMissingProgram) {
  fs::path dir = scratch("status");
  std::string error;
  EXPECT_EQ(runToFile({"/bin/sh", "-c", "echo hi; exit 3"}, (dir / "log").string(), error), 3);
  std::string log;
  ASSERT_TRUE(readTextFile((dir / "log").string(), log, error)) << error;
  EXPECT_EQ(log, "hi\n");
  EXPECT_NE(runToFile({"no-such-program-mixc"}, (dir / "log").string(), error), 0);
  EXPECT_NE(error.find("cannot run no-such-program-mixc"), std::string::npos) << error;
  fs::remove_all(dir);
}

TEST(SplitWords, BlanksSplitQuotesDoNot) {
  EXPECT_EQ(splitWords("  ccache   g++ -O2 "), (std::vector<std::string>{"ccache", "g++", "-O2"}));
  EXPECT_EQ(splitWords("a 'b c'"), (std::vector<std::string>{"a", "'b", "c'"}));
  EXPECT_TRUE(splitWords("   ").empty());
}

TEST(FolderLock, ASecondHolderIsRefusedWithTheFirstsPid) {
  fs::path dir = scratch("lock");
  std::string error;
  auto first = FolderLock::acquire(dir.string(), error);
  ASSERT_TRUE(first) << error;
  // Another process (a forked child: flock is per open file description).
  pid_t child = fork();
  if (child == 0) {
    std::string e;
    auto second = FolderLock::acquire(dir.string(), e);
    bool ok = !second && e.find("(pid " + std::to_string(getppid()) + ")") != std::string::npos;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // Released with its holder.
  first.reset();
  child = fork();
  if (child == 0)
    _exit(FolderLock::acquire(dir.string(), error) ? 0 : 1);
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fs::remove_all(dir);
}

TEST(AtomicWrite, ReplacesWholeAndLeavesNoTemporary) {
  fs::path dir = scratch("atomic");
  std::string error, text;
  const std::string path = (dir / "f.txt").string();
  ASSERT_TRUE(writeFileAtomically(path, "old", error)) << error;
  ASSERT_TRUE(writeFileAtomically(path, std::string(1 << 20, 'x'), error)) << error;
  ASSERT_TRUE(readTextFile(path, text, error)) << error;
  EXPECT_EQ(text, std::string(1 << 20, 'x'));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  // A directory as the target: an error, and nothing left beside it.
  fs::create_directories(dir / "d");
  EXPECT_FALSE(writeFileAtomically((dir / "d").string(), "x", error));
  EXPECT_NE(error.find("is a directory"), std::string::npos) << error;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
  // A folder that does not exist: an error, not an exception.
  EXPECT_FALSE(writeFileAtomically((dir / "missing" / "f").string(), "x", error));
  fs::remove_all(dir);
}

TEST(AtomicWrite, FollowsASymlinkAndKeepsIt) {
  fs::path dir = scratch("atomic-link");
  std::string error, text;
  std::ofstream(dir / "real.txt") << "old";
  fs::create_symlink("real.txt", dir / "link.txt");
  ASSERT_TRUE(writeFileAtomically((dir / "link.txt").string(), "new", error)) << error;
  EXPECT_TRUE(fs::is_symlink(dir / "link.txt")); // still a link, not a file renamed over it
  ASSERT_TRUE(readTextFile((dir / "real.txt").string(), text, error)) << error;
  EXPECT_EQ(text, "new");
  // A dangling link creates what it names; a loop is an error naming the path.
  fs::create_symlink("sub/made.txt", dir / "dangling");
  fs::create_directories(dir / "sub");
  ASSERT_TRUE(writeFileAtomically((dir / "dangling").string(), "made", error)) << error;
  EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
  ASSERT_TRUE(readTextFile((dir / "sub" / "made.txt").string(), text, error)) << error;
  EXPECT_EQ(text, "made");
  fs::create_symlink("b", dir / "a");
  fs::create_symlink("a", dir / "b");
  EXPECT_FALSE(writeFileAtomically((dir / "a").string(), "x", error));
  EXPECT_NE(error.find("loop"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_symlink(dir / "a"));
  fs::remove_all(dir);
}

TEST(AtomicWrite, WritesAFifoInPlace) {
  fs::path dir = scratch("atomic-fifo");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  pid_t reader = fork();
  if (reader == 0) { // reads the pipe to its end and exits 0 when it got the text
    std::ifstream in(fifo);
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    _exit(got == "through the pipe" ? 0 : 1);
  }
  std::string error;
  EXPECT_TRUE(writeFileAtomically(fifo.string(), "through the pipe", error)) << error;
  int status = 0;
  waitpid(reader, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(fs::is_fifo(fifo)); // not replaced by a regular file
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(AtomicWrite, WritesACharacterDeviceInPlace) {
  // A private null device (the system's /dev/null is never touched); root only.
  fs::path dir = scratch("atomic-dev");
  const fs::path dev = dir / "null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    fs::remove_all(dir);
    GTEST_SKIP() << "cannot make a device node here (not root, or no CAP_MKNOD)";
  }
  std::string error;
  EXPECT_TRUE(writeFileAtomically(dev.string(), "into the void", error)) << error;
  EXPECT_TRUE(fs::is_character_file(dev));
  // Through a symlink too: the link and the device both stay.
  fs::create_symlink(dev, dir / "stdout-like");
  EXPECT_TRUE(writeFileAtomically((dir / "stdout-like").string(), "x", error)) << error;
  EXPECT_TRUE(fs::is_symlink(dir / "stdout-like"));
  EXPECT_TRUE(fs::is_character_file(dev));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
  fs::remove_all(dir);
}

TEST(AtomicWrite, RemovesTheTemporaryAKilledWriterLeft) {
  fs::path dir = scratch("atomic-stale");
  pid_t gone = fork(); // a pid whose process has ended (and been reaped)
  if (gone == 0)
    _exit(0);
  waitpid(gone, nullptr, 0);
  const fs::path stale = dir / ("out.md.tmp" + std::to_string(gone));
  const fs::path live = dir / ("out.md.tmp" + std::to_string(::getppid())); // a running writer's
  const fs::path other = dir / ("other.md.tmp" + std::to_string(gone));     // another target's
  for (const fs::path &p : {stale, live, other})
    std::ofstream(p) << "half";
  std::string error;
  ASSERT_TRUE(writeFileAtomically((dir / "out.md").string(), "whole", error)) << error;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  fs::remove_all(dir);
}

TEST(TextFile, SaysWhyAFileCannotBeRead) {
  fs::path dir = scratch("text");
  std::string text, error;
  EXPECT_FALSE(readTextFile((dir / "missing").string(), text, error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  EXPECT_FALSE(readTextFile(dir.string(), text, error));
  EXPECT_NE(error.find("is a directory"), std::string::npos) << error;
  std::ofstream(dir / "big") << std::string(2048, 'a');
  EXPECT_FALSE(readTextFile((dir / "big").string(), text, error, 1024));
  EXPECT_TRUE(readTextFile((dir / "big").string(), text, error));
  EXPECT_EQ(text.size(), 2048u);
  fs::remove_all(dir);
}

TEST(Suggest, EditDistanceAgainstHandCounts) {
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("d_modle", "d_model"), 2u);
  EXPECT_EQ(editDistance("same", "same"), 0u);
}

TEST(Suggest, NearestNamesAndDidYouMean) {
  std::vector<std::string> names = {"layers[0].block_input", "layers[1].block_input", "embed",
                                    "layers[1].mixer.attn"};
  EXPECT_EQ(nearestNames("layers[3].block_input", names, 2),
            (std::vector<std::string>{"layers[0].block_input", "layers[1].block_input"}));
  EXPECT_EQ(nearestNames("x", {}, 3).size(), 0u);
  // A name that differs only in case comes first, before names as many
  // edits away (a scan's state S asked for as s).
  EXPECT_EQ(nearestNames("layers[0].mixer.s", {"layers[0].mixer.q", "layers[0].mixer.scan", "layers[0].mixer.S"}, 2),
            (std::vector<std::string>{"layers[0].mixer.S", "layers[0].mixer.q"}));
  EXPECT_EQ(didYouMean("mamba", {"mamba_lm", "based_lm"}), " (did you mean 'mamba_lm'?)");
  EXPECT_EQ(didYouMean("dd", {"d", "vocab"}), " (did you mean 'd'?)");
  EXPECT_EQ(didYouMean("completely_else", {"d", "vocab"}), "");
}

TEST(Ticks, NiceSpacingsCoverTheRange) {
  using mixc::support::niceTicks;
  EXPECT_EQ(niceTicks(0, 1, 4), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(niceTicks(0, 50016, 5), (std::vector<double>{0, 20000, 40000, 60000}));
  std::vector<double> t = niceTicks(-0.3, 2.1, 5); // spacing 0.5
  ASSERT_GE(t.size(), 2u);
  EXPECT_LE(t.front(), -0.3);
  EXPECT_GE(t.back(), 2.1);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 0.5);
  EXPECT_EQ(niceTicks(3, 3, 5).size(), 6u); // an empty range still gets an axis
}

TEST(Ticks, LabelsHaveTheDecimalsTheSpacingNeeds) {
  using mixc::support::tickLabel;
  EXPECT_EQ(tickLabel(0.25, 0.25), "0.25");
  EXPECT_EQ(tickLabel(0.5, 0.25), "0.50");
  EXPECT_EQ(tickLabel(3, 1), "3");
  EXPECT_EQ(tickLabel(20000, 20000), "20k");
  EXPECT_EQ(tickLabel(-0.0, 0.5), "0.0");
}

namespace {
/// The 9 px labels of a scatter plot: (x, baseline y, text).
std::vector<std::tuple<double, double, std::string>> scatterLabels(const std::string &svg) {
  std::vector<std::tuple<double, double, std::string>> out;
  const std::string open = "<text x='";
  for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const size_t end = svg.find("</text>", at);
    const std::string t = svg.substr(at, end - at);
    if (t.find("font-size='9'") == std::string::npos)
      continue;
    double x = 0, y = 0;
    std::sscanf(t.c_str(), "<text x='%lf' y='%lf'", &x, &y);
    out.emplace_back(x, y, t.substr(t.find('>') + 1));
  }
  return out;
}
} // namespace

TEST(Plot, ScatterLabelsDoNotOverlap) {
  // Six points crowded in one corner and two that clamp to the same pixel
  // (1.06 and 1.00 both draw at the top).
  std::vector<mixc::support::Point> points;
  for (int i = 0; i < 6; ++i)
    points.push_back({"model" + std::to_string(i) + ", 64", 0.50 + 0.03 * i, 0.50 + 0.025 * (i % 3)});
  points.push_back({"h3, 64", 0.0, 1.06});
  points.push_back({"deltanet, 64", 0.0, 1.00});
  const auto labels = scatterLabels(mixc::support::scatterPlot("t", "x", "y", points));
  ASSERT_EQ(labels.size(), 7u); // the two at one pixel share a label
  EXPECT_NE(std::get<2>(labels.back()).find("h3, 64; deltanet, 64"), std::string::npos);
  for (size_t a = 0; a < labels.size(); ++a)
    for (size_t b = a + 1; b < labels.size(); ++b) {
      // Boxes as drawn: 0.6 em a character, 9 px high above the baseline.
      const auto &[xa, ya, ta] = labels[a];
      const auto &[xb, yb, tb] = labels[b];
      const double wa = 5.4 * ta.size(), wb = 5.4 * tb.size();
      const bool apart = xa + wa <= xb || xb + wb <= xa || ya <= yb - 9 || yb <= ya - 9;
      EXPECT_TRUE(apart) << ta << " at (" << xa << ", " << ya << ") overlaps " << tb << " at (" << xb << ", " << yb << ")";
    }
}

TEST(Plot, BoxesShowQuartilesAndEverySample) {
  mixc::support::BoxChart b;
  b.title = "t", b.categories = {"a"}, b.series = {"s"};
  b.samples = {{{0.1, 0.2, 0.3, 0.4, 0.5}}};
  const std::string svg = mixc::support::boxChart(b);
  // The hover names the median and range; one dot per sample.
  EXPECT_NE(svg.find("median 0.30 of 5 (0.10 to 0.50)"), std::string::npos) << svg;
  size_t dots = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1))
    ++dots;
  EXPECT_EQ(dots, 5u);
}

TEST(Plot, BarIntervalsWidenTheAxisOnlyAsFarAsTheData) {
  mixc::support::BarChart b;
  b.title = "t", b.categories = {"a", "b"}, b.series = {"s"};
  b.values = {{0.5, -0.03}}, b.lo = {{0.4, -0.12}}, b.hi = {{0.6, 0.05}};
  const std::string svg = mixc::support::barChart(b);
  EXPECT_NE(svg.find("[0.40, 0.60]"), std::string::npos); // the interval on hover
  // The axis reaches just past -0.12 (the 0 line moves up by about 0.15 of
  // the 1.15 spanned, 180 px: 23 px above the plot's bottom at y = 220), not
  // to the next nice tick (-0.25: 36 px); nothing above 1 is added.
  const size_t zero = svg.find("text-anchor='end'>0.00<");
  ASSERT_NE(zero, std::string::npos) << svg;
  double y = 0;
  std::sscanf(svg.c_str() + svg.rfind("<text x='", zero), "<text x='%*[^']' y='%lf'", &y);
  EXPECT_NEAR(y - 4, 220 - 180 * 0.1536 / 1.1536, 1.0) << svg;
  EXPECT_EQ(svg.find(">-0.25<"), std::string::npos);
  EXPECT_EQ(svg.find(">1.25<"), std::string::npos);
}

TEST(Plot, LineChanceLineSitsAtItsValue) {
  mixc::support::LineChart c;
  c.title = "t", c.xLabel = "d", c.xs = {"16", "32"}, c.series = {"a"};
  c.values = {{0.25, 0.9}};
  c.reference = 0.25, c.referenceLabel = "chance 0.25";
  const std::string svg = mixc::support::lineChart(c);
  ASSERT_NE(svg.find(">chance 0.25<"), std::string::npos) << svg;
  // The dashed line's height is the height of the point whose value is 0.25.
  const size_t dash = svg.find("stroke-dasharray");
  ASSERT_NE(dash, std::string::npos) << svg;
  double lineY = -1, pointY = -2;
  std::sscanf(svg.c_str() + svg.rfind("<line", dash), "<line x1='%*[^']' x2='%*[^']' y1='%lf'", &lineY);
  std::sscanf(svg.c_str() + svg.find("<circle"), "<circle cx='%*[^']' cy='%lf'", &pointY);
  EXPECT_DOUBLE_EQ(lineY, pointY) << svg;
  // Without a reference, no dashed line.
  c.reference = 0.0 / 0.0;
  EXPECT_EQ(mixc::support::lineChart(c).find("stroke-dasharray"), std::string::npos);
}

TEST(Format, PrintfIntoAString) {
  EXPECT_EQ(mixc::support::format("%-5s|%6.2f|%lld", "ab", 3.14159, 42LL), "ab   |  3.14|42");
  EXPECT_EQ(mixc::support::format("%s", std::string(500, 'x').c_str()).size(), 500u);
}

TEST(OutputGuard, TheSameFileUnderAnotherNameIsAnInput) {
  fs::path d = scratch("guard");
  std::ofstream(d / "in.mix") << "model m() {}";
  fs::create_hard_link(d / "in.mix", d / "hard.mix");
  fs::create_directories(d / "sub");
  for (const fs::path &out : {d / "in.mix", d / "hard.mix", d / "sub" / ".." / "in.mix"})
    EXPECT_NE(outputClash(out.string(), {(d / "in.mix").string()}), "") << out;
  EXPECT_EQ(outputClash((d / "out.mlir").string(), {(d / "in.mix").string()}), "");
  EXPECT_EQ(outputClash((d / "new" / "deeper.mlir").string(), {(d / "in.mix").string()}), "");
  fs::remove_all(d);
}

TEST(OutputGuard, MixcsOwnFilesAreRefusedOnlyInItsFolders) {
  fs::path d = scratch("guard");
  fs::create_directories(d / "run");
  std::ofstream(d / "run" / "checkpoint.pt") << "x";
  fs::create_directories(d / "mine");
  // results.csv in a run folder is mixc's; in a folder of the user's it is theirs to replace.
  EXPECT_NE(outputClash((d / "run" / "results.csv").string(), {}), "");
  EXPECT_EQ(outputClash((d / "run" / "report.md").string(), {}), "");
  EXPECT_EQ(outputClash((d / "mine" / "results.csv").string(), {}), "");
  // A folder: empty, missing or marked is fine; anything else is refused, naming a file.
  EXPECT_EQ(foreignFolder((d / "mine").string(), {"mixc-bundle"}, "a bundle"), "");
  EXPECT_EQ(foreignFolder((d / "absent").string(), {"mixc-bundle"}, "a bundle"), "");
  std::ofstream(d / "mine" / "notes.txt") << "keep";
  EXPECT_NE(foreignFolder((d / "mine").string(), {"mixc-bundle"}, "a bundle").find("notes.txt"), std::string::npos);
  std::ofstream(d / "mine" / "mixc-bundle") << "mixc bundle 1";
  EXPECT_EQ(foreignFolder((d / "mine").string(), {"mixc-bundle"}, "a bundle"), "");
  fs::remove_all(d);
}

// The step-timing file a timed train run leaves for the sweep: what is
// written is read back; another format, version or a damaged file is an
// error naming the file, never a zero cost.
TEST(StepTiming, RoundTripsAndRefusesOtherFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "step-timing";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string error;
  mixc::support::StepTiming t{50016, 0.0125, 4.5, "generated"}, back;
  ASSERT_TRUE(mixc::support::writeStepTiming(dir.string(), t, error)) << error;
  ASSERT_TRUE(mixc::support::readStepTiming(dir.string(), back, error)) << error;
  EXPECT_EQ(back.totalSteps, 50016);
  EXPECT_DOUBLE_EQ(back.stepSec, 0.0125);
  EXPECT_DOUBLE_EQ(back.evalSec, 4.5);
  EXPECT_EQ(back.backend, "generated");
  const fs::path file = dir / mixc::support::kStepTimingFile;
  for (const char *text : {R"({"format": "mixc-step-timing", "version": 2, "total_steps": 1, "step_s": 1, "eval_s": 0, "backend": "x"})",
                           R"({"format": "other", "version": 1})", R"({"format": "mixc-step-timing", "version": 1})",
                           "timing: total_steps=5 step_s=0.1", ""}) {
    std::ofstream(file) << text;
    error.clear();
    EXPECT_FALSE(mixc::support::readStepTiming(dir.string(), back, error)) << text;
    EXPECT_NE(error.find("step-timing.json"), std::string::npos) << error;
  }
  fs::remove(file);
  EXPECT_FALSE(mixc::support::readStepTiming(dir.string(), back, error));
}

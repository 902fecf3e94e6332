//===- WeightsTest.cpp - weights out to safetensors and back in ------------===//
//
// Export, then init-from: a model given another model's file computes the
// same logits bit for bit (the same ops on the same weights in one process).
// Files that do not fit the model are refused, naming the tensor.
//
//===----------------------------------------------------------------------===//
#include "CompileStdlib.h"
#include "runtime/core/Model.h"
#include "runtime/train/Weights.h"
#include "support/Safetensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <fstream>
#include <iterator>
#include <unistd.h>

using mixc::rt::Model;

namespace {
std::unique_ptr<Model> mamba(uint64_t seed) {
  mix::CompileResult result = compileStdlib("mamba", {{"d", "16"}, {"vocab", "20"}, {"n_layers", "2"}});
  std::string error;
  auto model = Model::create(result.graph, error);
  EXPECT_TRUE(model) << error;
  if (model)
    model->initParameters(seed);
  return model;
}

std::string tempFile(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("mixc-weights-" + std::to_string(::getpid()) + "-" + name))
      .string();
}
} // namespace

TEST(Weights, ExportThenInitFromGivesTheSameLogits) {
  at::set_num_threads(1);
  auto a = mamba(1), b = mamba(2);
  ASSERT_TRUE(a && b);
  at::Tensor tokens = at::randint(3, 20, {2, 12}, at::kLong);
  torch::NoGradGuard noGrad;
  ASSERT_FALSE(at::equal(a->forward(tokens), b->forward(tokens))) << "two seeds gave the same weights";
  const std::string path = tempFile("roundtrip.safetensors");
  ASSERT_TRUE(mixc::train::saveWeights(*a, path, {{"model", "mamba"}}).isOk());
  mixc::support::Status loaded = mixc::train::loadWeights(*b, path);
  ASSERT_TRUE(loaded.isOk()) << loaded.message();
  EXPECT_TRUE(at::equal(a->forward(tokens), b->forward(tokens)));
  std::filesystem::remove(path);
}

TEST(Weights, AFileThatDoesNotFitTheModelIsRefusedByName) {
  auto a = mamba(1);
  ASSERT_TRUE(a);
  const std::string path = tempFile("good.safetensors"), bad = tempFile("bad.safetensors");
  ASSERT_TRUE(mixc::train::saveWeights(*a, path, {}).isOk());
  std::vector<mixc::support::StoredTensor> tensors;
  std::map<std::string, std::string> meta;
  std::string error;
  ASSERT_TRUE(mixc::support::readSafetensors(path, tensors, meta, error)) << error;
  ASSERT_GT(tensors.size(), 2u);
  const std::string first = tensors[0].name;

  auto refused = [&](std::vector<mixc::support::StoredTensor> edited) {
    EXPECT_TRUE(mixc::support::writeSafetensors(bad, edited, {}, error)) << error;
    mixc::support::Status s = mixc::train::loadWeights(*a, bad);
    EXPECT_FALSE(s.isOk());
    return s.message();
  };
  // A misspelt name: the nearest model tensor is suggested.
  auto misspelt = tensors;
  misspelt[0].name = first + "x";
  std::string m = refused(misspelt);
  EXPECT_NE(m.find("'" + first + "x' is not a tensor of the model"), std::string::npos) << m;
  EXPECT_NE(m.find(first), std::string::npos) << m;
  // A missing tensor.
  auto missing = std::vector<mixc::support::StoredTensor>(tensors.begin() + 1, tensors.end());
  m = refused(missing);
  EXPECT_NE(m.find("has no tensor '" + first + "'"), std::string::npos) << m;
  // Another shape (same bytes, reshaped).
  auto reshaped = tensors;
  reshaped[0].shape = {1, static_cast<int64_t>(reshaped[0].bytes.size() / 4)};
  m = refused(reshaped);
  EXPECT_NE(m.find("'" + first + "' has shape"), std::string::npos) << m;
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

// The reader refuses files that are not what they claim, instead of reading
// past the end.
TEST(Safetensors, TruncatedAndInconsistentFilesAreRefused) {
  const std::string path = tempFile("t.safetensors");
  std::string error;
  std::vector<mixc::support::StoredTensor> one = {{"w", "F32", {2, 3}, std::string(24, '\1')}};
  ASSERT_TRUE(mixc::support::writeSafetensors(path, one, {{"k", "v"}}, error)) << error;
  std::vector<mixc::support::StoredTensor> back;
  std::map<std::string, std::string> meta;
  ASSERT_TRUE(mixc::support::readSafetensors(path, back, meta, error)) << error;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back[0].bytes, one[0].bytes);
  EXPECT_EQ(meta.at("k"), "v");
  // Cut the data short.
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text.substr(0, text.size() - 4);
  EXPECT_FALSE(mixc::support::readSafetensors(path, back, meta, error));
  EXPECT_NE(error.find("outside the file"), std::string::npos) << error;
  // A header length past the end.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string("\xff\xff\0\0\0\0\0\0{}", 10);
  EXPECT_FALSE(mixc::support::readSafetensors(path, back, meta, error));
  EXPECT_NE(error.find("runs past the end"), std::string::npos) << error;
  // Bytes that do not fit the shape are not written.
  std::vector<mixc::support::StoredTensor> wrong = {{"w", "F32", {2, 3}, std::string(20, '\1')}};
  EXPECT_FALSE(mixc::support::writeSafetensors(path, wrong, {}, error));
  std::filesystem::remove(path);
}

// Headers whose offsets would make two tensors share bytes, leave bytes
// unread or be read as something else are refused, each with its reason
// (the reader used to take them: nlohmann truncates 1.5 to 1, keeps the
// last of two equal names, and nothing compared one tensor's span with
// another's).
TEST(Safetensors, OverlapsGapsFractionsDuplicatesAndTrailingBytesAreRefused) {
  // Two F32 tensors of 2 elements each over 16 data bytes.
  auto file = [](const std::string &header, size_t dataBytes) {
    std::string f(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
      f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return f + header + std::string(dataBytes, '\0');
  };
  auto refusal = [](const std::string &bytes) {
    std::vector<mixc::support::StoredTensor> t;
    std::map<std::string, std::string> meta;
    std::string error;
    EXPECT_FALSE(mixc::support::parseSafetensors(bytes, "x.safetensors", t, meta, error)) << bytes;
    return error;
  };
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":)";
  const std::string b = R"("b":{"dtype":"F32","shape":[2],"data_offsets":)";
  // The good file first: the same layout is read.
  std::vector<mixc::support::StoredTensor> t;
  std::map<std::string, std::string> meta;
  std::string error;
  EXPECT_TRUE(mixc::support::parseSafetensors(file("{" + a + "[0,8]}," + b + "[8,16]}}", 16), "x", t, meta, error))
      << error;
  EXPECT_NE(refusal(file("{" + a + "[0,8]}," + b + "[4,12]}}", 16)).find("overlaps"), std::string::npos);
  EXPECT_NE(refusal(file("{" + a + "[0,8]}," + b + "[12,20]}}", 20)).find("a gap before it"), std::string::npos);
  EXPECT_NE(refusal(file("{" + a + "[0,8]}," + b + "[8,16]}}", 17)).find("1 bytes after the last"),
            std::string::npos);
  EXPECT_NE(refusal(file("{" + a + "[0,8.5]}," + b + "[8,16]}}", 16)).find("not two non-negative integers"),
            std::string::npos);
  EXPECT_NE(refusal(file("{" + a + "[0,8]}," + a + "[8,16]}}", 16)).find("names 'a' twice"), std::string::npos);
}

// Weights that are not finite are refused at load, naming the tensor.
TEST(Weights, NonFiniteWeightsAreRefusedByName) {
  auto a = mamba(1);
  ASSERT_TRUE(a);
  const std::string path = tempFile("finite.safetensors"), bad = tempFile("nan.safetensors");
  ASSERT_TRUE(mixc::train::saveWeights(*a, path, {}).isOk());
  std::vector<mixc::support::StoredTensor> tensors;
  std::map<std::string, std::string> meta;
  std::string error;
  ASSERT_TRUE(mixc::support::readSafetensors(path, tensors, meta, error)) << error;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&tensors[1].bytes[0], &nan, sizeof nan);
  ASSERT_TRUE(mixc::support::writeSafetensors(bad, tensors, {}, error)) << error;
  mixc::support::Status s = mixc::train::loadWeights(*a, bad);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("tensor '" + tensors[1].name + "' holds 1 non-finite values"), std::string::npos)
      << s.message();
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

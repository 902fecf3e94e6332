//===- Frontend.h - load, parse and elaborate mixer DSL files ---*- C++ -*-===//
#ifndef MIXC_DSL_FRONTEND_H
#define MIXC_DSL_FRONTEND_H

#include "dsl/AST.h"
#include "dsl/ConfigEntry.h"
#include "dsl/Program.h"

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mixc::dsl {

class Frontend {
public:
  /// `searchPath`: folders tried, in order, for an import not found beside
  /// the importing file (the project root holds `stdlib/`).
  explicit Frontend(std::vector<std::string> searchPath);
  ~Frontend();

  /// Loads `path` and, transitively, its imports. On error prints
  /// `file:line:col: error: ...` with a caret to `err` and returns false.
  bool load(const std::string &path, std::ostream &err);
  /// Same, for text not on disk (tests, fuzzing).
  bool loadText(const std::string &path, const std::string &text, std::ostream &err);

  const Module &mainModule() const { return *modules_.at(mainPath_); }
  const SourceManager &sources() const { return sm_; }
  /// The models defined in the main file, in order.
  std::vector<std::string> models() const;

  /// Elaborates model `model` (empty: the main file's last model) with the
  /// config's overrides of its parameters.
  std::optional<Program> elaborate(const std::string &model,
                                   const std::vector<ConfigEntry> &config,
                                   std::ostream &err);

private:
  void loadModule(const std::string &path, const std::string *text,
                  std::vector<std::string> &stack, SourceLoc from);
  std::string resolveImport(const std::string &importer, const std::string &path,
                            SourceLoc loc) const;

  std::vector<std::string> searchPath_;
  SourceManager sm_;
  std::map<std::string, std::unique_ptr<Module>> modules_;
  std::vector<std::string> order_; // load order, imports first
  std::string mainPath_;
};

} // namespace mixc::dsl

#endif

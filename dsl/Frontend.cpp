//===- Frontend.cpp - load files, resolve imports, elaborate ----------------===//
#include "dsl/Frontend.h"
#include "support/Suggest.h"
#include "support/TextFile.h"
#include "dsl/Elaborator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace mixc::dsl {

Frontend::Frontend(std::vector<std::string> searchPath) : searchPath_(std::move(searchPath)) {}
Frontend::~Frontend() = default;

static std::string normal(const std::string &p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::path(p), ec);
  return ec ? fs::path(p).lexically_normal().string() : c.string();
}

std::string Frontend::resolveImport(const std::string &importer, const std::string &path,
                                    SourceLoc loc) const {
  std::vector<fs::path> tried;
  tried.push_back(fs::path(importer).parent_path() / path);
  for (const std::string &dir : searchPath_)
    tried.push_back(fs::path(dir) / path);
  for (const fs::path &p : tried) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec))
      return normal(p.string());
  }
  std::string where;
  for (const fs::path &p : tried)
    where += (where.empty() ? "" : ", ") + p.string();
  fail(loc, "cannot find imported file \"" + path + "\" (tried " + where + ")");
}

void Frontend::loadModule(const std::string &path, const std::string *text,
                          std::vector<std::string> &stack, SourceLoc from) {
  if (std::find(stack.begin(), stack.end(), path) != stack.end()) {
    std::string cycle;
    for (auto it = std::find(stack.begin(), stack.end(), path); it != stack.end(); ++it)
      cycle += *it + " -> ";
    fail(from, "cyclic import: " + cycle + path);
  }
  if (modules_.count(path))
    return;
  // Import chains are followed recursively: bound them like other nesting.
  if (stack.size() >= 64)
    fail(from, "imports nest more than 64 files deep");
  std::string contents;
  if (text) {
    contents = *text;
  } else {
    std::string error;
    if (!support::readTextFile(path, contents, error, 16u << 20))
      fail(from, error);
  }
  if (contents.find('\0') != std::string::npos) {
    int file = sm_.add(path, contents.substr(0, contents.find('\0')));
    SourceLoc at{file, 1, 1};
    fail(at, "\"" + path + "\" is not a text file (it contains NUL bytes)");
  }
  int file = sm_.add(path, contents);
  std::unique_ptr<Module> m = parseModule(contents, file, path);
  stack.push_back(path);
  for (const Import &imp : m->imports)
    loadModule(resolveImport(path, imp.path, imp.loc), nullptr, stack, imp.loc);
  stack.pop_back();
  order_.push_back(path);
  modules_[path] = std::move(m);
}

bool Frontend::load(const std::string &path, std::ostream &err) {
  try {
    std::error_code ec;
    if (fs::is_directory(path, ec))
      fail({}, "\"" + path + "\" is a directory, not a file");
    if (!fs::exists(path, ec))
      fail({}, "cannot open \"" + path + "\": " +
                   (ec && ec != std::errc::no_such_file_or_directory ? ec.message() : "no such file"));
    mainPath_ = normal(path);
    std::vector<std::string> stack;
    loadModule(mainPath_, nullptr, stack, {});
    return true;
  } catch (const DslError &e) {
    printError(err, sm_, e);
    return false;
  }
}

bool Frontend::loadText(const std::string &path, const std::string &text, std::ostream &err) {
  try {
    mainPath_ = path;
    std::vector<std::string> stack;
    loadModule(mainPath_, &text, stack, {});
    return true;
  } catch (const DslError &e) {
    printError(err, sm_, e);
    return false;
  }
}

std::vector<std::string> Frontend::models() const {
  std::vector<std::string> out;
  for (const auto &d : mainModule().defs)
    if (d->kind == Def::Kind::Model)
      out.push_back(d->name);
  return out;
}

std::optional<Program> Frontend::elaborate(const std::string &model,
                                           const std::vector<ConfigEntry> &config,
                                           std::ostream &err) {
  try {
    DefTable defs;
    for (const std::string &path : order_) {
      for (const auto &d : modules_.at(path)->defs) {
        auto [it, inserted] = defs.emplace(d->name, d.get());
        if (!inserted)
          fail(d->loc, "'" + d->name + "' is defined twice (first at " +
                           sm_.path(it->second->loc.file) + ":" +
                           std::to_string(it->second->loc.line) + ")");
      }
    }
    const Def *entry = nullptr;
    if (model.empty()) {
      for (const auto &d : mainModule().defs)
        if (d->kind == Def::Kind::Model)
          entry = d.get();
      if (!entry)
        fail({mainModule().file, 1, 1}, "\"" + mainModule().path + "\" defines no model");
    } else {
      auto it = defs.find(model);
      if (it == defs.end() || it->second->kind != Def::Kind::Model) {
        std::vector<std::string> names;
        for (const auto &[n, d] : defs)
          if (d->kind == Def::Kind::Model)
            names.push_back(n);
        fail({}, "no model named '" + model + "'" + support::didYouMean(model, names));
      }
      entry = it->second;
    }
    return elaborateModel(defs, *entry, config);
  } catch (const DslError &e) {
    printError(err, sm_, e);
    return std::nullopt;
  }
}

} // namespace mixc::dsl

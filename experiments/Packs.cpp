//===- Packs.cpp - which cells of a sweep train together --------------------===//
#include "experiments/Packs.h"
#include "runtime/train/Config.h"

#include <map>
#include <sstream>

namespace mixc::experiments {

std::string packKey(toml::table config) {
  for (const std::string &setting : train::packableSettings()) {
    const size_t dot = setting.find('.');
    if (toml::table *section = config[setting.substr(0, dot)].as_table())
      section->erase(setting.substr(dot + 1));
  }
  config.erase("output");
  std::ostringstream text;
  text << config;
  return text.str();
}

std::vector<std::vector<size_t>> formPacks(const std::vector<PackCandidate> &cells, int64_t k) {
  using Start = PackCandidate::Start;
  std::vector<std::vector<size_t>> units;
  std::map<std::string, size_t> open;    // key → its unit still taking Fresh members
  std::map<std::string, size_t> resumed; // pack.txt → the unit of its members
  for (size_t i = 0; i < cells.size(); ++i) {
    const PackCandidate &c = cells[i];
    if (k > 1 && c.start == Start::Fresh) {
      auto it = open.find(c.key);
      if (it != open.end() && units[it->second].size() < static_cast<size_t>(k)) {
        units[it->second].push_back(i);
        continue;
      }
      open[c.key] = units.size();
    } else if (k > 1 && c.start == Start::Resumes && !c.packedWith.empty()) {
      auto it = resumed.find(c.packedWith);
      if (it != resumed.end()) {
        units[it->second].push_back(i);
        continue;
      }
      resumed[c.packedWith] = units.size();
    }
    units.push_back({i});
  }
  return units;
}

std::string packFileText(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &n : names)
    text += n + "\n";
  return text;
}

std::vector<std::string> packFileMembers(const std::string &text) {
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      names.push_back(line);
  return names;
}

} // namespace mixc::experiments

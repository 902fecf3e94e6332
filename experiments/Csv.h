//===- Csv.h - the results tables sweeps and reports share ------*- C++ -*-===//
#ifndef MIXC_RUNTIME_EXPERIMENTS_CSV_H
#define MIXC_RUNTIME_EXPERIMENTS_CSV_H

#include <map>
#include <string>
#include <vector>

namespace mixc::experiments {

/// A CSV file as a header and rows of named fields (RFC 4180 quoting).
struct Table {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, std::string>> rows;
  void add(const std::map<std::string, std::string> &row);
  std::string text() const;
};

/// Writes `text` to `path` through a temporary file and a rename (creating
/// the folder): readers never see half a table.
void writeFileAtomically(const std::string &path, const std::string &text);

/// Reads `path`; a missing file is an empty table. Throws std::runtime_error
/// (naming the file and the record) when a row's field count is not the
/// header's: a damaged table.
Table readCsv(const std::string &path);
std::string csvField(const std::string &s);

} // namespace mixc::experiments

#endif

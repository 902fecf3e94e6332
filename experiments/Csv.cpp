//===- Csv.cpp - the results tables of sweeps (read, add, write) ------------===//
#include "experiments/Csv.h"
#include "support/AtomicWrite.h"

#include <algorithm>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mixc::experiments {

std::string csvField(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void Table::add(const std::map<std::string, std::string> &row) {
  for (const auto &[k, v] : row)
    if (std::find(columns.begin(), columns.end(), k) == columns.end())
      columns.push_back(k);
  rows.push_back(row);
}

std::string Table::text() const {
  std::ostringstream s;
  for (size_t i = 0; i < columns.size(); ++i)
    s << (i ? "," : "") << csvField(columns[i]);
  s << "\n";
  for (const auto &r : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      auto it = r.find(columns[i]);
      s << (i ? "," : "") << (it == r.end() ? "" : csvField(it->second));
    }
    s << "\n";
  }
  return s.str();
}

void writeFileAtomically(const std::string &path, const std::string &text) {
  namespace fs = std::filesystem;
  fs::create_directories(fs::absolute(path).parent_path());
  std::string error;
  if (!support::writeFileAtomically(path, text, error))
    throw std::runtime_error(error);
}

namespace {
/// Splits one record; `in` may hold quoted newlines.
bool readRecord(std::istream &in, std::vector<std::string> &fields) {
  fields.clear();
  std::string field;
  bool quoted = false, any = false;
  char c;
  while (in.get(c)) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          in.get(c);
          field += '"';
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!any)
    return false;
  fields.push_back(field);
  return true;
}
} // namespace

Table readCsv(const std::string &path) {
  Table t;
  std::ifstream in(path, std::ios::binary);
  if (!in || !readRecord(in, t.columns))
    return t;
  if (t.columns.size() == 1 && t.columns[0].empty()) // an empty table's file: no columns
    t.columns.clear();
  std::vector<std::string> f;
  // A damaged table (a cut row, a stray quote, bytes from elsewhere) is an
  // error naming the row: read as rows it would count as failed cells.
  for (int64_t record = 2; readRecord(in, f); ++record) {
    if (f.size() == 1 && f[0].empty())
      continue;
    if (f.size() != t.columns.size())
      throw std::runtime_error(path + ": record " + std::to_string(record) + " has " + std::to_string(f.size()) +
                               " fields where the header has " + std::to_string(t.columns.size()) +
                               " (the table is damaged: restore it from a copy, or delete it to rebuild it "
                               "from the cells' folders)");
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size(); ++i)
      row[t.columns[i]] = f[i];
    t.rows.push_back(row);
  }
  return t;
}

} // namespace mixc::experiments

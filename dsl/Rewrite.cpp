//===- Rewrite.cpp - parse intervention scripts -----------------------------===//
#include "dsl/Rewrite.h"
#include "support/Limits.h"
#include "support/TextFile.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace mixc::dsl {

std::string RwPosition::str() const {
  if (role == "pos")
    return "pos(" + std::to_string(index) + ")";
  if (offset == 0)
    return role;
  return role + (offset > 0 ? "+" : "") + std::to_string(offset);
}

NodeActions nodeActions(const std::vector<std::vector<int64_t>> &results, const std::vector<int64_t> *firstInput) {
  NodeActions a;
  if (results.size() != 1)
    return a;
  const std::vector<int64_t> &r = results[0];
  a.intervene = r.size() >= 2 && r[0] < 0 && r[1] < 0;
  a.remove = firstInput && *firstInput == r;
  return a;
}

bool matchesPattern(const std::string &p, const std::string &n) {
  // Iterative glob with backtracking over the last `*`.
  size_t i = 0, j = 0, star = std::string::npos, mark = 0;
  while (j < n.size()) {
    if (i < p.size() && p[i] == '*') {
      star = i++;
      mark = j;
    } else if (i < p.size() && p[i] == n[j]) {
      ++i, ++j;
    } else if (star != std::string::npos && n[mark] != '.') {
      i = star + 1;
      j = ++mark;
    } else {
      return false;
    }
  }
  while (i < p.size() && p[i] == '*')
    ++i;
  return i == p.size();
}

bool matchesStatePattern(const std::string &p, const std::string &state, bool ofScan) {
  if (matchesPattern(p, state))
    return true;
  const std::string alias = ".state";
  const size_t dot = state.rfind('.');
  return ofScan && dot != std::string::npos && p.size() > alias.size() &&
         p.compare(p.size() - alias.size(), alias.size(), alias) == 0 &&
         matchesPattern(p.substr(0, p.size() - alias.size()), state.substr(0, dot));
}

namespace {
using support::fitsFloat;

constexpr int64_t kMaxOffset = 1000000;
// A learned subspace wider than this is no longer a subspace of any model
// mixc trains (d ≤ 4096 in the paper's grids).
constexpr int64_t kMaxDasDim = 65536;
constexpr int64_t kMaxRange = 1000;
constexpr size_t kMaxCells = 10000;

/// A whole string as a base-10 int64; false when it is not one or does not
/// fit (strtoll would saturate silently).
bool parseInteger(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end || errno == ERANGE)
    return false;
  out = v;
  return true;
}

const std::set<std::string> kRoles = {"key", "value", "query", "divider", "answer", "all"};

/// A cursor over one line.
struct Line {
  const std::string &text;
  int file, line;
  std::string dir; // the script's folder, for add(FILE)
  size_t pos = 0;

  /// Where the next word starts.
  SourceLoc loc() {
    skipSpace();
    return {file, line, static_cast<int>(pos) + 1};
  }
  void skipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool atEnd() {
    skipSpace();
    return pos >= text.size();
  }
  /// The next run of characters that are not spaces or any of `stops`.
  std::string word(const char *stops = "") {
    skipSpace();
    size_t start = pos;
    while (pos < text.size() && !std::isspace(static_cast<unsigned char>(text[pos])) &&
           !std::strchr(stops, text[pos]))
      ++pos;
    return text.substr(start, pos - start);
  }
  /// The two characters `s` next (after blanks), consumed.
  bool acceptPair(const char *s) {
    skipSpace();
    if (text.compare(pos, 2, s) != 0)
      return false;
    pos += 2;
    return true;
  }
  bool accept(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string &what) {
    if (!accept(c))
      fail(loc(), std::string("expected '") + c + "' " + what);
  }
  void expectWord(const std::string &w, const std::string &what) {
    SourceLoc at = loc();
    if (word() != w)
      fail(at, "expected '" + w + "' " + what);
  }
};

/// `s` without the blanks (and a CR) at either end.
std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  size_t first = 0;
  while (first < s.size() && std::isspace(static_cast<unsigned char>(s[first])))
    ++first;
  return s.substr(first);
}

std::string substitute(const std::string &s, const std::map<std::string, std::string> &vars,
                       SourceLoc loc) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '$') {
      out += s[i];
      continue;
    }
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_'))
      ++j;
    std::string v = s.substr(i + 1, j - i - 1);
    auto it = vars.find(v);
    if (it == vars.end())
      fail(loc, "unknown sweep variable '$" + v + "'");
    out += it->second;
    i = j - 1;
  }
  return out;
}

RwPosition parsePosition(const std::string &text, SourceLoc loc) {
  RwPosition p;
  if (text.rfind("pos(", 0) == 0 && text.back() == ')') {
    p.role = "pos";
    std::string n = text.substr(4, text.size() - 5);
    if (!parseInteger(n, p.index) || p.index < 0)
      fail(loc, "pos(N) needs a non-negative integer that fits in 64 bits, got '" + n + "'");
    return p;
  }
  size_t sign = text.find_first_of("+-");
  p.role = text.substr(0, sign);
  if (!kRoles.count(p.role))
    fail(loc, "unknown position '" + p.role +
                  "'; expected key, value, query, divider, answer, all or pos(N)");
  if (sign != std::string::npos) {
    if (p.role == "all")
      fail(loc, "'all' takes no offset");
    if (sign + 1 == text.size() || !parseInteger(text.substr(sign), p.offset))
      fail(loc, "malformed offset in '" + text + "' (write e.g. key+1)");
    // Documents are far shorter; a bound keeps position arithmetic exact.
    if (p.offset > kMaxOffset || p.offset < -kMaxOffset)
      fail(loc, "the offset in '" + text + "' is beyond ±" + std::to_string(kMaxOffset));
  }
  return p;
}

/// A trailing `[a:b]` or `[head=h]` on the node pattern (a name's own
/// brackets, `layers[0]`, hold an index, `*` or nothing else), moved into
/// the action's subspace.
void parseSubspace(RwAction &a) {
  const std::string &p = a.pattern;
  size_t open = p.rfind('[');
  if (p.empty() || p.back() != ']' || open == std::string::npos)
    return;
  std::string inner = p.substr(open + 1, p.size() - open - 2);
  size_t colon = inner.find(':');
  bool isHead = inner.rfind("head=", 0) == 0;
  if (colon == std::string::npos && !isHead)
    return; // an index of the name itself
  SourceLoc at = a.loc;
  at.col += static_cast<int>(open);
  if (isHead) {
    if (!parseInteger(inner.substr(5), a.head) || a.head < 0)
      fail(at, "[head=h] needs a non-negative integer, got '" + inner.substr(5) + "'");
  } else {
    std::string lo = inner.substr(0, colon), hi = inner.substr(colon + 1);
    if (!parseInteger(lo, a.lo) || !parseInteger(hi, a.hi) || a.lo < 0 || a.hi <= a.lo)
      fail(at, "a channel range is [a:b] with integers 0 <= a < b, got '[" + inner + "]'");
  }
  a.pattern = p.substr(0, open);
  if (a.pattern.empty())
    fail(a.loc, "expected a node name before '[" + inner + "]'");
  if (a.kind == Action::Remove)
    fail(at, "remove takes a whole node, not '[" + inner + "]'");
}

/// `-> RECEIVER` after the sender (spaced or not: `a->b`), into the action.
void parseReceiver(Line &l, RwAction &a, const std::map<std::string, std::string> &vars) {
  if (size_t arrow = a.pattern.find("->"); arrow != std::string::npos) {
    a.receiver = a.pattern.substr(arrow + 2);
    a.receiverLoc = a.loc;
    a.receiverLoc.col += static_cast<int>(arrow + 2);
    a.pattern = a.pattern.substr(0, arrow);
  } else if (l.acceptPair("->")) {
    a.receiverLoc = l.loc();
    a.receiver = substitute(l.word(), vars, a.receiverLoc);
  } else {
    return;
  }
  if (a.pattern.empty())
    fail(a.loc, "expected a node name before '->'");
  if (a.receiver.empty() || a.receiver == "at")
    fail(a.receiverLoc, "expected the reading node after '->' (write: patch SENDER -> RECEIVER at POSITION)");
  if (a.kind == Action::Das)
    fail(a.loc, "das(k) learns a subspace of a node's value, not of an edge: write das(k) NODE at POSITION");
}

/// `via N1 -> N2 -> ...` after the sender (up to `at`), into the action.
void parsePath(Line &l, RwAction &a, const std::map<std::string, std::string> &vars) {
  SourceLoc viaAt = l.loc();
  const size_t mark = l.pos;
  if (l.word() != "via") {
    l.pos = mark;
    return;
  }
  if (!a.receiver.empty())
    fail(viaAt, "an action takes an edge (SENDER -> RECEIVER) or a path (SENDER via N1 -> N2), not both");
  if (a.kind == Action::Das)
    fail(a.loc, "das(k) learns a subspace of a node's value, not of a path: write das(k) NODE at POSITION");
  bool wantNode = true;
  while (!l.atEnd()) {
    const size_t before = l.pos;
    SourceLoc at = l.loc();
    if (l.acceptPair("->")) {
      if (wantNode)
        fail(at, "expected a node of the path before '->'");
      wantNode = true;
      continue;
    }
    std::string word = l.word();
    if (word == "at") {
      l.pos = before;
      break;
    }
    // Nodes joined without blanks (a->b) split at each arrow.
    size_t start = 0;
    while (true) {
      const size_t arrow = word.find("->", start);
      std::string node = word.substr(start, arrow == std::string::npos ? std::string::npos : arrow - start);
      SourceLoc nodeAt = at;
      nodeAt.col += static_cast<int>(start);
      if (!node.empty()) {
        if (!wantNode)
          fail(nodeAt, "expected '->' between the nodes of the path (write: via N1 -> N2 -> N3)");
        a.via.push_back(substitute(node, vars, nodeAt));
        a.viaLocs.push_back(nodeAt);
        wantNode = false;
      } else if (arrow != std::string::npos && wantNode) {
        fail(nodeAt, "expected a node of the path before '->'");
      }
      if (arrow == std::string::npos)
        break;
      wantNode = true;
      start = arrow + 2;
    }
  }
  if (a.via.empty() || wantNode)
    fail(l.loc(), "expected a node of the path after '" + std::string(a.via.empty() ? "via" : "->") +
                      "' (write: patch SENDER via N1 -> N2 at POSITION)");
}

/// ACTION NODE at POS, with sweep variables substituted.
RwAction parseAction(Line &l, const std::map<std::string, std::string> &vars) {
  RwAction a;
  SourceLoc at = l.loc();
  const std::string word = l.word("(");
  std::optional<Action> kind = actionNamed(word);
  if (!kind || *kind == Action::Remove) // `remove NODE` is a statement of its own
    fail(at, "unknown action '" + word + "'; expected " + kActionList);
  a.kind = *kind;
  if (a.kind == Action::Noise) {
    l.expect('(', "after noise (write noise(0.1))");
    std::string s = l.word(")");
    char *end = nullptr;
    a.sigma = std::strtod(s.c_str(), &end);
    // strtod reads "nan" and "inf": both would write NaN Attrib rows.
    if (s.empty() || *end || !std::isfinite(a.sigma) || a.sigma < 0)
      fail(at, "noise(σ) needs a finite non-negative number, got '" + s + "'");
    if (!fitsFloat(a.sigma)) // the activations are floats: the noise would be inf, the Attrib NaN
      fail(at, "noise(σ): " + s + " is larger than a float holds (3.4e38)");
    l.expect(')', "to close noise(");
  } else if (a.kind == Action::Add) {
    l.expect('(', "after add (write add(vector.txt))");
    SourceLoc ploc = l.loc();
    std::string file = l.word(")");
    l.expect(')', "to close add(");
    if (!file.empty() && file.front() == '"' && file.back() == '"' && file.size() >= 2)
      file = file.substr(1, file.size() - 2);
    std::filesystem::path p(file);
    if (p.is_relative())
      p = std::filesystem::path(l.dir) / p;
    std::ifstream in(p);
    if (!in)
      fail(ploc, "cannot open vector file \"" + p.string() + "\"");
    std::string tok;
    while (in >> tok) {
      char *end = nullptr;
      double v = std::strtod(tok.c_str(), &end);
      if (*end || !std::isfinite(v))
        fail(ploc, "\"" + p.string() + "\" holds '" + tok + "', which is not a finite number");
      if (!fitsFloat(v))
        fail(ploc, "\"" + p.string() + "\" holds " + tok + ", which is larger than a float holds (3.4e38)");
      a.vector.push_back(v);
    }
    if (a.vector.empty())
      fail(ploc, "\"" + p.string() + "\" holds no numbers");
  } else if (a.kind == Action::Das) {
    l.expect('(', "after das (write das(4): the subspace's dimension)");
    SourceLoc kloc = l.loc();
    std::string k = substitute(l.word(")"), vars, kloc);
    if (!parseInteger(k, a.dasK) || a.dasK < 1 || a.dasK > kMaxDasDim)
      fail(kloc, "das(k) needs an integer 1 <= k <= " + std::to_string(kMaxDasDim) + ", got '" + k + "'");
    l.expect(')', "to close das(");
  }
  a.loc = l.loc();
  a.pattern = substitute(l.word(), vars, a.loc);
  if (a.pattern.empty())
    fail(a.loc, "expected a node name after '" + word + "'");
  parseReceiver(l, a, vars);
  parseSubspace(a);
  parsePath(l, a, vars);
  l.expectWord("at", "after the node name (write: " + word + " NODE at POSITION, " + word +
                         " SENDER -> RECEIVER at POSITION or " + word + " SENDER via N1 -> N2 at POSITION)");
  SourceLoc ploc = l.loc();
  a.position = parsePosition(substitute(l.word(), vars, ploc), ploc);
  if (!l.atEnd())
    fail(l.loc(), "unexpected text after the position");
  return a;
}

struct SweepVar {
  std::string name;
  std::vector<std::string> values;
};

void parseLine(Line &l, RwScript &s) {
  SourceLoc at = l.loc();
  std::string head = l.word("(");
  // A second corrupt (direction, readout) line used to replace the first
  // without a word: the script means one of them.
  if (head == "corrupt" || head == "direction" || head == "readout") {
    if (auto it = s.settingAt.find(head); it != s.settingAt.end())
      fail(at, "'" + head + "' is set twice (first on line " + std::to_string(it->second.line) +
                   "): a script has one " + head + " setting");
    s.settingAt[head] = at;
  }
  if (head == "corrupt") {
    SourceLoc vloc = l.loc();
    s.corrupt = l.word();
    if (s.corrupt != "key" && s.corrupt != "value" && s.corrupt != "none")
      fail(vloc, "corrupt takes key, value or none");
  } else if (head == "direction") {
    SourceLoc vloc = l.loc();
    std::string d = l.word();
    if (d != "restore" && d != "swap")
      fail(vloc, "direction takes restore or swap");
    s.swap = d == "swap";
  } else if (head == "readout") {
    SourceLoc vloc = l.loc();
    s.readout = l.word();
    if (s.readout != "p" && s.readout != "logit_diff" && s.readout != "kl")
      fail(vloc, "readout takes p, logit_diff or kl");
  } else if (head == "remove") {
    RwAction a;
    a.kind = Action::Remove;
    a.loc = l.loc();
    a.pattern = l.word();
    if (a.pattern.empty())
      fail(a.loc, "expected a node name after 'remove'");
    parseSubspace(a);
    s.removes.push_back(a);
  } else if (head == "sweep") {
    std::vector<SweepVar> vars;
    do {
      SweepVar v;
      SourceLoc vloc = l.loc();
      v.name = l.word(",:");
      if (v.name.empty())
        fail(vloc, "expected a sweep variable name");
      l.expectWord("in", "after the sweep variable");
      if (l.accept('{')) {
        do {
          SourceLoc eloc = l.loc();
          v.values.push_back(l.word(",}"));
          // Two cells of one label and one meaning: a typo, refused here.
          if (std::count(v.values.begin(), v.values.end(), v.values.back()) > 1)
            fail(eloc, "'" + v.values.back() + "' is listed twice in the set of $" + v.name);
        } while (l.accept(','));
        l.expect('}', "to close the set");
      } else {
        SourceLoc rloc = l.loc();
        std::string range = l.word(",:");
        size_t dots = range.find("..");
        auto bad = [&] { fail(rloc, "expected a range A..B or a set {a, b}, got '" + range + "'"); };
        if (dots == std::string::npos || dots == 0 || dots + 2 >= range.size())
          bad();
        std::string lo = range.substr(0, dots), hi = range.substr(dots + 2);
        int64_t from = 0, to = 0;
        if (!parseInteger(lo, from) || !parseInteger(hi, to))
          bad();
        if (to <= from)
          fail(rloc, "the range " + range + " is empty (A..B runs from A up to B - 1)");
        // Compared without forming to - from, which can overflow.
        if ((from < 0 && to > INT64_MAX + from) || to - from > kMaxRange)
          fail(rloc, "the range " + range + " has more than " + std::to_string(kMaxRange) +
                         " values (the most one sweep variable may take)");
        for (int64_t i = from; i < to; ++i)
          v.values.push_back(std::to_string(i));
      }
      vars.push_back(v);
    } while (l.accept(','));
    l.expect(':', "after the sweep variables (sweep v in 0..2: ACTION ...)");
    size_t combinations = 1;
    for (const SweepVar &v : vars)
      if ((combinations *= v.values.size()) > kMaxCells)
        fail(at, "the sweep has more than " + std::to_string(kMaxCells) + " cells (the limit)");
    if (s.cells.size() + combinations > kMaxCells)
      fail(at, "the script has more than " + std::to_string(kMaxCells) +
                   " cells in all (the limit), counting this sweep's " + std::to_string(combinations));
    size_t actionStart = l.pos;
    // Cartesian product, first variable outermost.
    std::vector<size_t> idx(vars.size(), 0);
    while (true) {
      std::map<std::string, std::string> env;
      RwCell cell;
      for (size_t i = 0; i < vars.size(); ++i) {
        env[vars[i].name] = vars[i].values[idx[i]];
        cell.coords.push_back({vars[i].name, vars[i].values[idx[i]]});
        cell.label += (i ? " " : "") + vars[i].name + "=" + vars[i].values[idx[i]];
      }
      l.pos = actionStart;
      cell.actions.push_back(parseAction(l, env));
      cell.statement = trimmed(substitute(l.text.substr(actionStart), env, at));
      cell.at = at;
      s.cells.push_back(cell);
      size_t k = vars.size();
      while (k > 0 && ++idx[k - 1] == vars[k - 1].values.size())
        idx[--k] = 0;
      if (k == 0)
        break;
    }
  } else {
    if (s.cells.size() >= kMaxCells)
      fail(at, "the script has more than " + std::to_string(kMaxCells) + " cells in all (the limit)");
    l.pos = at.col - 1;
    RwCell cell;
    cell.actions.push_back(parseAction(l, {}));
    cell.statement = cell.label = trimmed(l.text.substr(at.col - 1));
    cell.at = at;
    s.cells.push_back(cell);
    return;
  }
  if (!l.atEnd())
    fail(l.loc(), "unexpected text after '" + head + "'");
}
/// Gives every cell a label of its own: sweep cells whose variables another
/// cell shares (two sweeps over `layer`, one of them on a subspace) add
/// their statement, and a statement written twice adds its line.
void labelUniquely(std::vector<RwCell> &cells) {
  auto shared = [&cells] {
    std::map<std::string, std::vector<size_t>> byLabel;
    for (size_t i = 0; i < cells.size(); ++i)
      byLabel[cells[i].label].push_back(i);
    std::vector<size_t> out;
    for (const auto &[label, indices] : byLabel)
      if (indices.size() > 1)
        out.insert(out.end(), indices.begin(), indices.end());
    return out;
  };
  for (size_t i : shared())
    if (cells[i].label != cells[i].statement)
      cells[i].label += ": " + cells[i].statement;
  for (size_t i : shared())
    cells[i].label += " (line " + std::to_string(cells[i].at.line) + ")";
}
} // namespace

bool parseRewrite(const std::string &text, const std::string &path, SourceManager &sm,
                  RwScript &script, std::ostream &err) {
  int file = sm.add(path, text);
  try {
    std::istringstream in(text);
    std::string raw;
    int lineNo = 0;
    while (std::getline(in, raw)) {
      ++lineNo;
      std::string line = raw.substr(0, raw.find('#'));
      Line l{line, file, lineNo, std::filesystem::path(path).parent_path().string()};
      if (l.atEnd())
        continue;
      parseLine(l, script);
    }
    if (script.cells.empty() && script.removes.empty())
      fail({file, 1, 1}, "the script has no intervention (patch, zero, mean, noise, sweep or remove)");
    labelUniquely(script.cells);
    return true;
  } catch (const DslError &e) {
    printError(err, sm, e);
    return false;
  }
}

bool loadRewrite(const std::string &path, SourceManager &sm, RwScript &script, std::ostream &err) {
  std::string text, error;
  if (!support::readTextFile(path, text, error, kMaxRewriteBytes)) {
    err << "error: rewrite script: " << error << "\n";
    return false;
  }
  return parseRewrite(text, path, sm, script, err);
}

} // namespace mixc::dsl

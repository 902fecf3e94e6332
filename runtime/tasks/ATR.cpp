//===- ATR.cpp - Associative Treecall data (protocol §2) --------------------===//
#include "runtime/tasks/ATR.h"
#include "runtime/tasks/TaskError.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace mixc::tasks {

std::string ATRConfig::key() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "atr-v1-s%lld-n%lld-l%lld-r%lld-d%lld-f%lld-h%g-m%lld-%lld-%lld-seed%llu",
                (long long)numTerminals, (long long)numNonterminals, (long long)maxRhsLen,
                (long long)maxRulesPerNt, (long long)maxDepth, (long long)terminalFactor, heldOut,
                (long long)maxStringLen, (long long)trainSize, (long long)testSize,
                (unsigned long long)seed);
  return buf;
}

namespace {
/// Dirichlet(1, …, 1): normalised Exp(1) draws.
std::vector<double> flatDirichlet(std::mt19937_64 &rng, int64_t k) {
  std::exponential_distribution<double> e(1.0);
  std::vector<double> p(static_cast<size_t>(k));
  double sum = 0;
  for (double &x : p)
    sum += x = e(rng);
  for (double &x : p)
    x /= sum;
  return p;
}

/// numpy's randint(lo, hi): uniform over [lo, hi − 1] (the generator's
/// exclusive upper bounds are part of the task's definition).
int64_t randint(std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi - 1))(rng);
}
} // namespace

PCFG::PCFG(const ATRConfig &c) : c_(c), rng_(c.seed) {
  const int64_t N = c.numNonterminals, S = c.numTerminals;
  // 1. Depths d(X) ~ U{1..d_max}; X may only use Y with d(Y) > d(X).
  std::uniform_int_distribution<int32_t> depth(1, static_cast<int32_t>(c.maxDepth));
  for (int64_t x = 0; x < N; ++x)
    depth_.push_back(depth(rng_));
  // 2. Rules: randint(1, R_max) of them, RHS length randint(1, L_max), each
  //    symbol iid: every allowed nonterminal weight 1, the terminals together
  //    weight r (or 1 each without the factor), a terminal then uniform.
  rules_.resize(N);
  for (int64_t x = 0; x < N; ++x) {
    std::vector<int32_t> allowed;
    for (int64_t y = 0; y < N; ++y)
      if (depth_[y] > depth_[x])
        allowed.push_back(static_cast<int32_t>(y));
    double terminalWeight = c.terminalFactor > 0 ? static_cast<double>(c.terminalFactor)
                                                 : static_cast<double>(S);
    std::bernoulli_distribution isTerminal(terminalWeight / (terminalWeight + allowed.size()));
    std::uniform_int_distribution<int32_t> terminal(0, static_cast<int32_t>(S - 1));
    std::uniform_int_distribution<size_t> nonterminal(0, allowed.empty() ? 0 : allowed.size() - 1);
    int64_t numRules = randint(rng_, 1, c.maxRulesPerNt);
    for (int64_t r = 0; r < numRules; ++r) {
      std::vector<int32_t> rhs;
      int64_t len = randint(rng_, 1, c.maxRhsLen);
      for (int64_t i = 0; i < len; ++i)
        rhs.push_back(allowed.empty() || isTerminal(rng_) ? terminal(rng_)
                                                           : -1 - allowed[nonterminal(rng_)]);
      rules_[x].push_back(rhs);
    }
  }
  // 3./4. Rule probabilities and head distributions: flat Dirichlets.
  for (int64_t x = 0; x < N; ++x) {
    std::vector<double> p = flatDirichlet(rng_, static_cast<int64_t>(rules_[x].size()));
    ruleDist_.emplace_back(p.begin(), p.end());
  }
  for (int64_t x = 0; x < N; ++x) {
    std::vector<double> p = flatDirichlet(rng_, S);
    headDist_.emplace_back(p.begin(), p.end());
  }
  // §2.5: a fraction of the |Σ|² (parent, child) label pairs, held out
  // (a partial shuffle picks exactly that many).
  if (c.heldOut > 0) {
    std::vector<int32_t> pairs(static_cast<size_t>(S * S));
    for (size_t i = 0; i < pairs.size(); ++i)
      pairs[i] = static_cast<int32_t>(i);
    const size_t held = static_cast<size_t>(c.heldOut * static_cast<double>(pairs.size()) + 0.5);
    heldOut_.assign(pairs.size(), 0);
    for (size_t i = 0; i < held; ++i) {
      std::swap(pairs[i], pairs[std::uniform_int_distribution<size_t>(i, pairs.size() - 1)(rng_)]);
      heldOut_[pairs[i]] = 1;
    }
  }
}

bool PCFG::heldOut(int32_t parentLabel, int32_t childLabel) const {
  return !heldOut_.empty() &&
         heldOut_[static_cast<size_t>(parentLabel) * c_.numTerminals + childLabel];
}

ATRString PCFG::sample() {
  struct Item {
    int32_t symbol; // ≥ 0 terminal label, < 0 nonterminal −1 − X
    int32_t id;     // a terminal's id (its node in the tree)
    int32_t headId; // the id of the head this symbol hangs from; −1: none
  };
  ATRString s;
  std::vector<int32_t> idOf; // per emitted position
  std::vector<int32_t> headOf;
  std::vector<Item> stack;
  // 5. The start symbol: uniform over the nonterminals.
  std::uniform_int_distribution<int32_t> start(0, static_cast<int32_t>(c_.numNonterminals - 1));
  stack.push_back({-1 - start(rng_), -1, -1});
  int32_t nextId = 0;
  while (!stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    if (it.symbol >= 0) { // emit
      if (static_cast<int64_t>(s.labels.size()) >= c_.maxStringLen)
        return {}; // rejected: too long (stop before it grows further)
      s.labels.push_back(it.symbol);
      idOf.push_back(it.id);
      headOf.push_back(it.headId);
      continue;
    }
    const int32_t x = -1 - it.symbol, thisHead = nextId++;
    const std::vector<int32_t> &rhs = rules_[x][ruleDist_[x](rng_)];
    // The head goes on the stack first, so it is emitted last (head-right);
    // the RHS symbols are pushed in reverse so they come out left to right.
    stack.push_back({headDist_[x](rng_), thisHead, it.headId});
    for (auto sym = rhs.rbegin(); sym != rhs.rend(); ++sym)
      stack.push_back({*sym, *sym >= 0 ? nextId++ : -1, thisHead});
  }
  std::vector<int32_t> positionOfId(static_cast<size_t>(nextId), -1);
  for (size_t i = 0; i < idOf.size(); ++i)
    positionOfId[idOf[i]] = static_cast<int32_t>(i);
  for (int32_t h : headOf)
    s.parent.push_back(h < 0 ? -1 : positionOfId[h]);
  return s;
}

Dataset sampleDocuments(PCFG &pcfg, const ATRConfig &c, int64_t n, bool test) {
  Dataset d;
  d.vocabSize = c.vocabSize();
  d.corruptLow = kFirstTerminal; // corruption draws another terminal (§6)
  d.corruptHigh = kFirstTerminal + static_cast<int32_t>(c.numTerminals);
  std::mt19937_64 &rng = pcfg.rng();
  std::vector<int32_t> doc;
  // Rejection sampling ends: a grammar that yields no eligible document in
  // this many draws in a row (strings too long, no held-out pair it can
  // produce) is reported instead of looping forever.
  constexpr int64_t kMaxRejected = 200000;
  int64_t rejected = 0, draws = 0;
  auto reject = [&](const char *why) {
    if (++rejected < kMaxRejected)
      return;
    throw TaskError("ATR: the grammar gave no eligible " + std::string(test ? "test" : "training") +
                    " document in " + std::to_string(kMaxRejected) + " draws in a row (" + why +
                    "); change num_terminals, held_out, max_string_len or the grammar's seed");
  };
  while (d.size() < n) {
    if (++draws % 4096 == 0)
      pollStop("ATR");
    ATRString s = pcfg.sample();
    const int32_t len = static_cast<int32_t>(s.labels.size());
    if (len < 3) {
      reject(len == 0 ? "the last was longer than max_string_len" : "the last had fewer than 3 symbols");
      continue;
    }
    // Eligible children: the rightmost occurrence of their label, with a
    // parent, and (with a split) a label pair of the requested side.
    std::vector<char> seen(static_cast<size_t>(c.numTerminals), 0);
    std::map<int32_t, std::vector<int32_t>> childrenOf; // parent position → eligible children
    for (int32_t i = len - 1; i >= 0; --i) {
      int32_t label = s.labels[i];
      if (seen[label])
        continue;
      seen[label] = 1;
      int32_t p = s.parent[i];
      if (p < 0)
        continue;
      if (c.heldOut > 0 && pcfg.heldOut(s.labels[p], label) != test)
        continue;
      childrenOf[p].push_back(i);
    }
    if (childrenOf.empty()) { // no eligible query: rejected
      reject(c.heldOut > 0 ? (test ? "no held-out label pair with a parent"
                                   : "no label pair outside the held-out ones with a parent")
                           : "no symbol with a parent");
      continue;
    }
    rejected = 0;
    // sample_first = "target": a parent uniformly, then one of its children.
    auto parent = childrenOf.begin();
    std::advance(parent, std::uniform_int_distribution<size_t>(0, childrenOf.size() - 1)(rng));
    const std::vector<int32_t> &kids = parent->second;
    int32_t child = kids[std::uniform_int_distribution<size_t>(0, kids.size() - 1)(rng)];
    doc.assign(1, kBos);
    for (int32_t label : s.labels)
      doc.push_back(kFirstTerminal + label);
    doc.push_back(kEos);
    doc.push_back(kFirstTerminal + s.labels[child]);
    doc.push_back(kFirstTerminal + s.labels[parent->first]);
    doc.push_back(kEos);
    const int32_t query = len + 2; // = document length − 3
    d.append(doc, query, kFirstTerminal + s.labels[parent->first], 1 + child, 1 + parent->first,
             query, query - 1);
  }
  return d;
}

namespace {
constexpr char kAtrCacheMagic[8] = {'m', 'i', 'x', 'c', 'A', 'T', 'R', '1'};
}

TaskData makeATR(const ATRConfig &c, const std::string &cacheDir) {
  std::string file = cacheDir.empty() ? "" : cacheDir + "/" + c.key() + ".bin";
  TaskData data;
  if (!file.empty() && loadCache(file, kAtrCacheMagic, c.trainSize, c.testSize, c.vocabSize(), data))
    return data;
  PCFG pcfg(c);
  data.train = sampleDocuments(pcfg, c, c.trainSize, false);
  data.test = sampleDocuments(pcfg, c, c.testSize, c.heldOut > 0);
  if (!file.empty())
    saveCache(file, kAtrCacheMagic, data);
  return data;
}

} // namespace mixc::tasks

//===- Task.cpp - the task a run trains on ----------------------------------===//
#include "runtime/tasks/Task.h"

namespace mixc::tasks {

TaskData makeTask(const TaskConfig &c, const std::string &cacheDir) {
  return c.isATR() ? makeATR(c.atr, cacheDir) : makeAR(c.ar, cacheDir);
}

support::Status loadTask(const TaskConfig &c, const std::string &cacheDir, TaskData &out) {
  try {
    out = makeTask(c, cacheDir);
    return support::Status::ok();
  } catch (const TaskError &e) {
    return e.interrupted ? support::Status::interrupted(e.what()) : support::Status::failed(e.what());
  }
}

namespace {
/// "task.KEY (trained A, asked B)" when `a` and `b` differ, else "".
std::string changed(const char *key, int64_t a, int64_t b) {
  return a == b ? "" : std::string("task.") + key + " (trained " + std::to_string(a) + ", asked " + std::to_string(b) + ")";
}
} // namespace

std::string identityChange(const TaskConfig &trained, const TaskConfig &asked) {
  if (trained.name != asked.name)
    return "task.name (trained " + trained.name + ", asked " + asked.name + ")";
  std::string why;
  auto note = [&why](const std::string &c) {
    if (!c.empty())
      why += (why.empty() ? "" : ", ") + c;
  };
  if (!trained.isATR()) { // which tokens are keys and which values, and which one is asked for
    note(changed("num_kv", trained.ar.numKV, asked.ar.numKV));
    if (trained.ar.queryValue != asked.ar.queryValue)
      note(std::string("task.query (trained ") + (trained.ar.queryValue ? "value" : "key") + ", asked " +
           (asked.ar.queryValue ? "value" : "key") + ")");
    return why;
  }
  const ATRConfig &t = trained.atr, &a = asked.atr; // the grammar and its terminals' tokens
  note(changed("num_terminals", t.numTerminals, a.numTerminals));
  note(changed("num_nonterminals", t.numNonterminals, a.numNonterminals));
  note(changed("max_rhs_len", t.maxRhsLen, a.maxRhsLen));
  note(changed("max_rules_per_nt", t.maxRulesPerNt, a.maxRulesPerNt));
  note(changed("terminal_occurrence_factor", t.terminalFactor, a.terminalFactor));
  note(changed("seed", static_cast<int64_t>(t.seed), static_cast<int64_t>(a.seed)));
  return why;
}

} // namespace mixc::tasks

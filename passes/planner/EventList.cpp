//===- EventList.cpp - Compute/free event lists ---------------------------===//
#include "passes/planner/EventList.h"

#include <ostream>
#include <sstream>

namespace remat {
namespace planner {

int EventList::computeCount() const {
  int count = 0;
  for (const Event &event : events)
    count += event.kind == EventKind::Compute;
  return count;
}

void EventList::print(std::ostream &os, const Problem &problem) const {
  for (const Event &event : events) {
    os << (event.kind == EventKind::Compute ? "compute " : "free ")
       << event.node;
    if (event.node >= 0 && event.node < problem.size())
      os << " '" << problem.nodes[event.node].name << "'";
    os << "\n";
  }
}

CheckmateSolution CheckmateSolution::empty(int n) {
  CheckmateSolution solution;
  solution.recompute.assign(n, std::vector<char>(n, 0));
  solution.resident.assign(n, std::vector<char>(n, 0));
  return solution;
}

EventList eliminateDeadComputes(const Problem &problem,
                                const EventList &schedule) {
  int n = problem.size();
  EventList current = schedule;
  while (true) {
    size_t count = current.events.size();
    std::vector<char> dead(count, 0);
    // laterCompute[i]: a compute of the same node follows event i. Only
    // such computes may go: every node keeps at least one.
    std::vector<char> laterCompute(count, 0);
    {
      std::vector<char> seen(n, 0);
      for (size_t i = count; i-- > 0;) {
        const Event &event = current.events[i];
        if (event.node < 0 || event.node >= n)
          return current; // malformed: leave it to the checker
        if (event.kind == EventKind::Compute) {
          laterCompute[i] = seen[event.node];
          seen[event.node] = 1;
        }
      }
    }
    std::vector<int> liveCompute(n, -1); // event index of the live copy
    std::vector<char> read(count, 0);
    bool changed = false;
    for (size_t i = 0; i < count; ++i) {
      const Event &event = current.events[i];
      int &copy = liveCompute[event.node];
      if (event.kind == EventKind::Compute) {
        for (int op : problem.nodes[event.node].operands)
          if (liveCompute[op] >= 0)
            read[liveCompute[op]] = 1;
        if (copy >= 0 && !read[copy]) // overwritten unread: not a valid
          return current;             // schedule; the checker says why
        copy = static_cast<int>(i);
        continue;
      }
      if (copy >= 0 && !read[copy] && laterCompute[copy]) {
        dead[copy] = dead[i] = 1;
        changed = true;
      }
      copy = -1;
    }
    if (!changed)
      return current;
    EventList next;
    for (size_t i = 0; i < count; ++i)
      if (!dead[i])
        next.events.push_back(current.events[i]);
    current = std::move(next);
  }
}

EventList CheckmateSolution::toSchedule(const Problem &problem,
                                        std::string *error) const {
  int n = problem.size();
  UseInfo uses(problem);
  EventList schedule;
  std::vector<char> live(n, 0);
  std::vector<int> lastRead(n, -1);
  auto fail = [&](const std::string &message) {
    if (error && error->empty())
      *error = message;
  };
  for (int t = 0; t < n; ++t) {
    std::vector<int> computes;
    for (int i = 0; i < t; ++i)
      if (recompute[t][i])
        computes.push_back(i);
    computes.push_back(t);
    for (int i = 0; i < n; ++i)
      lastRead[i] = -1;
    for (int pos = 0; pos < static_cast<int>(computes.size()); ++pos)
      for (int op : problem.nodes[computes[pos]].operands)
        lastRead[op] = pos;
    auto keepNext = [&](int v) {
      return t + 1 < n ? resident[t + 1][v] != 0 : uses.required[v] != 0;
    };
    for (int v = 0; v < n; ++v) {
      if (resident[t][v] && !live[v]) {
        std::ostringstream os;
        os << "stage " << t << " expects node " << v
           << " resident but it is not live";
        fail(os.str());
      }
      if (live[v] && lastRead[v] < 0 && !keepNext(v)) {
        schedule.free(v);
        live[v] = 0;
      }
    }
    for (int pos = 0; pos < static_cast<int>(computes.size()); ++pos) {
      int k = computes[pos];
      if (!live[k]) {
        for (int op : problem.nodes[k].operands) {
          if (!live[op]) {
            std::ostringstream os;
            os << "stage " << t << " computes node " << k << " but operand "
               << op << " is not live";
            fail(os.str());
          }
        }
        schedule.compute(k);
        live[k] = 1;
      }
      auto maybeFree = [&](int v) {
        if (live[v] && lastRead[v] <= pos && !keepNext(v)) {
          schedule.free(v);
          live[v] = 0;
        }
      };
      for (int op : problem.nodes[k].operands)
        maybeFree(op);
      maybeFree(k);
    }
  }
  return schedule;
}

bool CheckmateSolution::fromSchedule(const Problem &problem,
                                     const EventList &schedule,
                                     CheckmateSolution &result) {
  int n = problem.size();
  result = empty(n);
  std::vector<char> live(n, 0);
  int stage = 0;
  int previous = -1;
  bool stageStarted = false;
  for (const Event &event : schedule.events) {
    if (event.node < 0 || event.node >= n)
      return false;
    if (event.kind == EventKind::Free) {
      live[event.node] = 0;
      continue;
    }
    if (stage >= n)
      return false;
    if (!stageStarted) {
      for (int v = 0; v < n; ++v)
        result.resident[stage][v] = live[v];
      stageStarted = true;
    }
    int k = event.node;
    if (k <= previous || k > stage)
      return false;
    result.recompute[stage][k] = 1;
    live[k] = 1;
    previous = k;
    if (k == stage) {
      ++stage;
      previous = -1;
      stageStarted = false;
    }
  }
  return stage == n;
}

} // namespace planner
} // namespace remat

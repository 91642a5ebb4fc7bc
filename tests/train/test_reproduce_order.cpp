// The order in which `relpos reproduce --jobs` starts a grid's runs (tools/relpos/reproduce_runs.h
// next_pending): each cell's first run in grid order, then runs of cells still on their first
// run, then the longest measured cells first; and the end once every run has started.
#include "tests/harness.h"
#include "tools/relpos/reproduce_runs.h"

using namespace relpos;
using cli::Cell;
using cli::PendingRun;

TEST_CASE("reproduce --jobs: the longest runs first, as far as is known") {
  const Cell a{"a", "", "", "", "", {}}, b{"b", "", "", "", "", {}}, c{"c", "", "", "", "", {}},
      d{"d", "", "", "", "", {}};
  // Grid order: a0 a1 a2 b0 b1 c0 c1 d0.
  std::vector<PendingRun> pending;
  for (const auto& [cell, seed] : std::vector<std::pair<const Cell*, int64_t>>{
           {&a, 0}, {&a, 1}, {&a, 2}, {&b, 0}, {&b, 1}, {&c, 0}, {&c, 1}, {&d, 0}})
    pending.push_back({cell, 0, seed, static_cast<int64_t>(pending.size()), {}});
  std::vector<bool> started(pending.size(), false);
  std::map<const Cell*, double> seconds;
  const auto start_next = [&] {
    const size_t i = cli::next_pending(pending, started, seconds);
    REQUIRE(i < pending.size());
    started[i] = true;
    return i;
  };
  // Every cell's first run, in grid order.
  CHECK(start_next() == 0);  // a0
  CHECK(start_next() == 3);  // b0
  CHECK(start_next() == 5);  // c0
  CHECK(start_next() == 7);  // d0
  // a and b measured (a short, b long), c and d still on their first run: c1 (unknown) first,
  // then b1 (50 s), then a's (10 s) in grid order.
  seconds[&a] = 10;
  seconds[&b] = 50;
  CHECK(start_next() == 6);  // c1
  CHECK(start_next() == 4);  // b1
  CHECK(start_next() == 1);  // a1
  CHECK(start_next() == 2);  // a2
  CHECK(cli::next_pending(pending, started, seconds) == pending.size());
}

// MaxFlow (capture/MaxFlow.h): Dinic's maximum flow equals the minimum cut,
// on a textbook network, on random small networks against every cut, with
// uncuttable edges, and the source side it reports is a minimum cut.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "capture/MaxFlow.h"

using kiln::capture::MaxFlow;

namespace {

using Edges = std::vector<std::tuple<size_t, size_t, int64_t>>;

MaxFlow network(size_t n, const Edges& edges) {
  MaxFlow f(n);
  for (const auto& [a, b, c] : edges) f.add_edge(a, b, c);
  return f;
}

int64_t cut_capacity(const Edges& edges, const std::vector<bool>& source_side) {
  int64_t sum = 0;
  for (const auto& [a, b, c] : edges) sum += source_side[a] && !source_side[b] ? c : 0;
  return sum;
}

}  // namespace

TEST(MaxFlow, TextbookNetwork) {
  // CLRS figure 26.1: s=0, v1..v4 = 1..4, t=5; the maximum flow is 23.
  const Edges edges = {{0, 1, 16}, {0, 2, 13}, {2, 1, 4}, {1, 3, 12}, {3, 2, 9},
                       {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
  MaxFlow f = network(6, edges);
  EXPECT_EQ(f.max_flow(0, 5), 23);
  const std::vector<bool> side = f.source_side();
  EXPECT_TRUE(side[0]);
  EXPECT_FALSE(side[5]);
  EXPECT_EQ(cut_capacity(edges, side), 23);
}

TEST(MaxFlow, RandomNetworksAgreeWithEveryCut) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 2 + rng() % 6;
    Edges edges;
    const size_t m = rng() % 16;
    for (size_t k = 0; k < m; ++k) edges.emplace_back(rng() % n, rng() % n, static_cast<int64_t>(rng() % 10));
    MaxFlow f = network(n, edges);
    const int64_t flow = f.max_flow(0, n - 1);
    int64_t best = INT64_MAX;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      std::vector<bool> side(n);
      for (size_t v = 0; v < n; ++v) side[v] = ((mask >> v) & 1u) != 0;
      if (!side[0] || side[n - 1]) continue;
      best = std::min(best, cut_capacity(edges, side));
    }
    ASSERT_EQ(flow, best) << "trial " << trial;
    ASSERT_EQ(cut_capacity(edges, f.source_side()), flow) << "trial " << trial;
  }
}

TEST(MaxFlow, UncuttableEdgesStayUncut) {
  // 0 -> 1 uncuttable, 1 -> 2 costs 5, 0 -> 2 costs 3: the cut takes 1 -> 2 and 0 -> 2.
  MaxFlow f(3);
  f.add_edge(0, 1, MaxFlow::kUncuttable);
  f.add_edge(1, 2, 5);
  f.add_edge(0, 2, 3);
  EXPECT_EQ(f.max_flow(0, 2), 8);
  EXPECT_EQ(f.source_side(), (std::vector<bool>{true, true, false}));

  MaxFlow all(2);
  all.add_edge(0, 1, MaxFlow::kUncuttable);
  EXPECT_GE(all.max_flow(0, 1), MaxFlow::kUncuttable);
}

TEST(MaxFlow, TiesGiveTheCutNearestTheSource) {
  // A chain of equal capacities: every edge is a minimum cut; the first one is reported.
  MaxFlow f(4);
  f.add_edge(0, 1, 2);
  f.add_edge(1, 2, 2);
  f.add_edge(2, 3, 2);
  EXPECT_EQ(f.max_flow(0, 3), 2);
  EXPECT_EQ(f.source_side(), (std::vector<bool>{true, false, false, false}));
}

TEST(MaxFlow, MisuseIsRejected) {
  MaxFlow f(2);
  EXPECT_THROW(f.add_edge(0, 1, -1), std::exception);
  EXPECT_THROW(f.add_edge(0, 2, 1), std::exception);
  EXPECT_THROW((void)f.source_side(), std::exception);
  EXPECT_THROW((void)f.max_flow(0, 0), std::exception);
  EXPECT_EQ(f.add_vertex(), 2u);
}

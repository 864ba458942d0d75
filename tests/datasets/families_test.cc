#include "datasets/families.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "tests/testing/graph_checks.h"

namespace devplace {
namespace {

using testing::ExpectSameGraph;
using testing::ExpectWellFormedTrainingGraph;

TEST(Families, Names) {
  EXPECT_EQ(FamilyNames(), (std::vector<std::string>{"cifar10", "ptb", "nmt", "transformer", "lstmlm"}));
}

TEST(Families, UnknownFamilyAndBadTargetAreErrors) {
  Expected<Graph> g = GenerateFamilyMember("imagenet", 1);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("'imagenet'"), std::string::npos);
  Expected<Graph> negative = GenerateFamilyMember("nmt", 1, FamilyOptions{-5});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().message.find("target_ops"), std::string::npos);
  // Smaller than any member of the family can be.
  Expected<Graph> tiny = GenerateFamilyMember("cifar10", 1, FamilyOptions{20});
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message.find("smallest member"), std::string::npos);
}

TEST(Families, SameSeedSameGraph) {
  for (const std::string& family : FamilyNames()) {
    SCOPED_TRACE(family);
    for (uint64_t seed : {0u, 7u}) {
      Graph a = GenerateFamilyMember(family, seed).value();
      Graph b = GenerateFamilyMember(family, seed).value();
      ExpectSameGraph(a, b);
      EXPECT_EQ(a.name(), family + "-seed" + std::to_string(seed));
    }
  }
}

TEST(Families, DifferentSeedsGiveDistinctMembers) {
  for (const std::string& family : FamilyNames()) {
    SCOPED_TRACE(family);
    std::set<std::tuple<int32_t, int32_t, double, int64_t>> seen;
    for (uint64_t seed = 0; seed < 12; ++seed) {
      Graph g = GenerateFamilyMember(family, seed).value();
      seen.emplace(g.num_ops(), g.num_edges(), g.total_flops(), g.total_param_bytes());
    }
    EXPECT_EQ(seen.size(), 12u);
  }
}

TEST(Families, MembersAreWellFormedTrainingGraphs) {
  for (const std::string& family : FamilyNames()) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      SCOPED_TRACE(family + " seed " + std::to_string(seed));
      ExpectWellFormedTrainingGraph(GenerateFamilyMember(family, seed).value());
    }
  }
}

TEST(Families, NaturalSizesSpanTheFamilyRanges) {
  // Training-graph op counts over 40 seeds: from about a hundred to a few thousand ops.
  struct Range {
    const char* family;
    int32_t lo, hi;
  };
  int32_t smallest = 1 << 30, largest = 0;
  for (const Range& r : {Range{"cifar10", 250, 3000}, Range{"ptb", 100, 2500}, Range{"nmt", 300, 4000},
                         Range{"transformer", 60, 800}, Range{"lstmlm", 100, 1000}}) {
    SCOPED_TRACE(r.family);
    int32_t lo = 1 << 30, hi = 0;
    for (uint64_t seed = 0; seed < 40; ++seed) {
      const int32_t n = GenerateFamilyMember(r.family, seed).value().num_ops();
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    EXPECT_GE(lo, r.lo);
    EXPECT_LE(hi, r.hi);
    EXPECT_GT(hi, 2 * lo);  // sizes vary with the seed
    smallest = std::min(smallest, lo);
    largest = std::max(largest, hi);
  }
  EXPECT_LE(smallest, 200);
  EXPECT_GE(largest, 2000);
}

TEST(Families, TargetOpsIsReachedWithinTwentyPercent) {
  for (const std::string& family : FamilyNames()) {
    for (int32_t target : {1500, 6000}) {
      for (uint64_t seed : {1u, 2u}) {
        SCOPED_TRACE(family + " target " + std::to_string(target) + " seed " + std::to_string(seed));
        Graph g = GenerateFamilyMember(family, seed, FamilyOptions{target}).value();
        EXPECT_NEAR(g.num_ops(), target, 0.2 * target);
        EXPECT_EQ(g.name(), family + "-seed" + std::to_string(seed) + "-ops" + std::to_string(target));
      }
    }
  }
}

TEST(Families, LongUnrolledNmtExceedsFiftyThousandOps) {
  Graph g = GenerateFamilyMember("nmt", 7, FamilyOptions{52000}).value();
  EXPECT_GT(g.num_ops(), 50000);
  EXPECT_NEAR(g.num_ops(), 52000, 0.2 * 52000);
  ExpectWellFormedTrainingGraph(g);
  // Unrolling shares weights: far fewer parameter owners than LSTM steps.
  int32_t gates = 0;
  for (const Op& op : g.ops()) gates += op.type == "lstm_gates" ? 1 : 0;
  EXPECT_GT(gates, 50 * g.count_role(OpRole::kUpdate));
}

TEST(Families, ScalingKeepsTheSeedsStructure) {
  // A scaled member keeps the drawn hyper-parameters: the same op types, only more of them.
  for (const std::string& family : FamilyNames()) {
    SCOPED_TRACE(family);
    Graph natural = GenerateFamilyMember(family, 3).value();
    Graph big = GenerateFamilyMember(family, 3, FamilyOptions{3 * natural.num_ops()}).value();
    std::set<std::string> a, b;
    for (const Op& op : natural.ops()) a.insert(op.type);
    for (const Op& op : big.ops()) b.insert(op.type);
    EXPECT_EQ(a, b);
    EXPECT_GT(big.num_ops(), 2 * natural.num_ops());
  }
}

}  // namespace
}  // namespace devplace

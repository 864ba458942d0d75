// PartsQueryChooser: how a query of several far-apart parts is asked, from the time earlier queries took.
#include "sim/parts_query_chooser.h"

#include <gtest/gtest.h>

namespace devplace::sim {
namespace {

// Asks `queries` times for a span and records each answer's cost (`parts` or `whole` seconds); returns how many
// were asked by parts.
int AskAndRecord(PartsQueryChooser* chooser, int32_t span, int queries, double parts, double whole) {
  int by_parts = 0;
  for (int k = 0; k < queries; ++k) {
    const bool p = chooser->ByParts(span);
    by_parts += p;
    chooser->Record(span, p, p ? parts : whole);
  }
  return by_parts;
}

TEST(PartsQueryChooser, TriesBothWaysFirstThenTakesTheCheaperAndTheDearerAtItsRate) {
  PartsQueryChooser chooser;
  // Each way twice, in turn, parts first.
  for (bool expected : {true, false, true, false}) {
    const bool p = chooser.ByParts(20000);
    EXPECT_EQ(p, expected);
    chooser.Record(20000, p, p ? 1e-3 : 2e-3);
  }
  // Parts half as dear: whole once every 16 x 2^2 = 64 queries.
  EXPECT_EQ(AskAndRecord(&chooser, 20000, 640, 1e-3, 2e-3), 630);
  // Whole 16x dearer: each of its tries raises its mean (by at most 4x it, counted as an outlier beyond that), so
  // the tries come ever less often (16 x ratio^2 queries apart).
  const int whole = 4096 - AskAndRecord(&chooser, 20000, 4096, 1e-3, 16e-3);
  EXPECT_GE(whole, 4);
  EXPECT_LE(whole, 12);
}

TEST(PartsQueryChooser, FollowsAChangeOfWhichWayIsCheaper) {
  PartsQueryChooser chooser;
  AskAndRecord(&chooser, 5000, 256, 1e-3, 1.5e-3);
  ASSERT_TRUE(chooser.ByParts(5000));
  // Parts become dearer than whole: once the dearer way's tries have raised its mean, whole is taken.
  AskAndRecord(&chooser, 5000, 1024, 2e-3, 1.5e-3);
  EXPECT_LT(AskAndRecord(&chooser, 5000, 256, 2e-3, 1.5e-3), 256 / 16);
}

TEST(PartsQueryChooser, KeepsSpanClassesApart) {
  PartsQueryChooser chooser;
  AskAndRecord(&chooser, 300, 256, 3e-3, 1e-3);     // short spans: whole cheaper
  AskAndRecord(&chooser, 40000, 256, 1e-3, 3e-3);   // long spans: parts cheaper
  EXPECT_LT(AskAndRecord(&chooser, 300, 64, 3e-3, 1e-3), 64 / 8);
  EXPECT_GT(AskAndRecord(&chooser, 40000, 64, 1e-3, 3e-3), 64 - 64 / 8);
  EXPECT_LT(AskAndRecord(&chooser, 400, 64, 3e-3, 1e-3), 64 / 8);  // the same class as 300 (256-511)
}

TEST(PartsQueryChooser, AnOutlierDoesNotTurnTheChoice) {
  PartsQueryChooser chooser;
  AskAndRecord(&chooser, 20000, 256, 1e-3, 2e-3);
  ASSERT_TRUE(chooser.ByParts(20000));
  chooser.Record(20000, true, 1.0);  // a preempted query: counts as 4x the mean
  EXPECT_GT(AskAndRecord(&chooser, 20000, 32, 1e-3, 2e-3), 30);
}

}  // namespace
}  // namespace devplace::sim

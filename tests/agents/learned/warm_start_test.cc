// Training runs that start from a saved policy (ppo.init_policy) and train entries with their own teachers.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "agents/learned/learning.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "sim/cost_model.h"
#include "tests/agents/learned/same_runs.h"
#include "tests/testing/learn_fixtures.h"

namespace devplace {
namespace {

using learntest::ExpectSameRuns;
using learntest::SameParameters;

Expected<TrainSummary> Train(const std::string& config, const std::string& run, int64_t max_iterations = 0,
                             std::vector<std::string>* messages = nullptr) {
  TrainOptions options{.config_path = config, .run_dir = run, .max_iterations = max_iterations};
  if (messages != nullptr) options.on_message = [messages](const std::string& m) { messages->push_back(m); };
  return TrainPolicy(options);
}

TEST(WarmStart, StartsFromTheSavedParametersAndTrainsOnDeterministically) {
  const std::string dir = learntest::TempDir("warm");
  const std::string base = learntest::WriteTinyExperiment(dir + "/base", 2);
  Expected<TrainSummary> saved = Train(base, dir + "/base/run");
  ASSERT_TRUE(saved.ok()) << saved.error().message;

  // With a learning rate of 0 the run keeps exactly the saved parameters; a fresh run with it keeps its own.
  const std::string frozen = learntest::WriteTinyExperiment(dir + "/frozen", 1, {{"ppo: {", "ppo: {lr: 0, lr_final: 0, init_policy: ../base/run/ckpt, "}});
  std::vector<std::string> messages;
  Expected<TrainSummary> kept = Train(frozen, dir + "/frozen/run", 0, &messages);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_TRUE(SameParameters(saved->checkpoint_dir, kept->checkpoint_dir, base));
  bool said = false;
  for (const std::string& m : messages) said |= m.find("parameters initialised from " + dir + "/base/run/ckpt") == 0;
  EXPECT_TRUE(said);
  const std::string cold = learntest::WriteTinyExperiment(dir + "/cold", 1, {{"ppo: {", "ppo: {lr: 0, lr_final: 0, "}});
  Expected<TrainSummary> fresh = Train(cold, dir + "/cold/run");
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_FALSE(SameParameters(saved->checkpoint_dir, fresh->checkpoint_dir, base));

  // Training on moves away from them, the same way every time, and resumes exactly without the saved policy.
  const std::string warm = learntest::WriteTinyExperiment(dir + "/warm", 3, {{"ppo: {", "ppo: {init_policy: ../base/run/ckpt, "}});
  Expected<TrainSummary> a = Train(warm, dir + "/warm/a");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_FALSE(SameParameters(saved->checkpoint_dir, a->checkpoint_dir, base));
  Expected<TrainSummary> b = Train(warm, dir + "/warm/b", 1);
  ASSERT_TRUE(b.ok()) << b.error().message;
  std::filesystem::remove_all(dir + "/base/run");
  Expected<TrainSummary> resumed = TrainPolicy({.config_path = "", .run_dir = dir + "/warm/b", .resume = true});
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  ExpectSameRuns(*a, *resumed, warm);

  // Without the saved policy a fresh warm start is an error naming the key.
  Expected<TrainSummary> missing = Train(warm, dir + "/warm/c");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message.find(warm + ": ppo.init_policy: "), 0u) << missing.error().message;
  EXPECT_NE(missing.error().message.find("state.json"), std::string::npos) << missing.error().message;
  std::filesystem::remove_all(dir);
}

TEST(WarmStart, RefusesAPolicyOfAnotherArchitecture) {
  const std::string dir = learntest::TempDir("warm-shape");
  const std::string base = learntest::WriteTinyExperiment(dir + "/base", 1);
  ASSERT_TRUE(Train(base, dir + "/base/run").ok());
  const std::string wider = learntest::WriteTinyExperiment(
      dir + "/wide", 1, {{"policy: {hidden: 16,", "policy: {hidden: 32,"}, {"ppo: {", "ppo: {init_policy: ../base/run/ckpt, "}});
  Expected<TrainSummary> refused = Train(wider, dir + "/wide/run");
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.error().message;
  EXPECT_EQ(message.find(wider + ": ppo.init_policy: " + dir + "/base/run/ckpt: parameter '"), 0u) << message;
  EXPECT_NE(message.find("architectures differ"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir + "/wide/run"));  // refused before anything is written
  std::filesystem::remove_all(dir);
}

// A SOAP policy reading 19 candidate columns warm-starts one reading 22 (the star columns): the new columns start
// at weight 0, so both place alike; the other way round is refused.
TEST(WarmStart, WidensASoapPolicyToMoreCandidateColumns) {
  const std::string dir = learntest::TempDir("warm-widen");
  const std::string soap = "policy: {candidate_features: 19, ";
  const std::string narrow = learntest::WriteTinyExperiment(dir + "/narrow", 1, {{"policy: {", "env: {action_space: soap}\n" + soap}});
  Expected<TrainSummary> saved = Train(narrow, dir + "/narrow/run");
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  const std::string wide = learntest::WriteTinyExperiment(
      dir + "/wide", 1,
      {{"policy: {", "env: {action_space: soap}\npolicy: {candidate_features: 22, "},
       {"ppo: {", "ppo: {lr: 0, lr_final: 0, init_policy: ../narrow/run/ckpt, "}});
  Expected<TrainSummary> widened = Train(wide, dir + "/wide/run");
  ASSERT_TRUE(widened.ok()) << widened.error().message;
  Expected<std::unique_ptr<LearnedPolicy>> a = LearnedPolicy::Load(saved->checkpoint_dir);
  Expected<std::unique_ptr<LearnedPolicy>> b = LearnedPolicy::Load(widened->checkpoint_dir);
  ASSERT_TRUE(a.ok() && b.ok());
  Graph g = BuildGraph(GraphSource{.family = "ptb", .seed = 9, .target_ops = 120}).value();
  Topology t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml").value();
  PlaceOptions sample;
  sample.samples = 8;
  sample.seed = 4;
  Expected<PlaceResult> pa = (*a)->Place(g, t, MakeAnalyticCostModel(), {}, sample);
  Expected<PlaceResult> pb = (*b)->Place(g, t, MakeAnalyticCostModel(), {}, sample);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(pa->strategy, pb->strategy);
  EXPECT_EQ(pa->zero_shot_step_time, pb->zero_shot_step_time);

  const std::string back = learntest::WriteTinyExperiment(dir + "/back", 1,
                                       {{"policy: {", "env: {action_space: soap}\n" + soap},
                                        {"ppo: {", "ppo: {init_policy: ../wide/run/ckpt, "}});
  Expected<TrainSummary> refused = Train(back, dir + "/back/run");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("parameter 'candidate_key.weight' is [16, 22] there, [16, 19] here"),
            std::string::npos)
      << refused.error().message;
  std::filesystem::remove_all(dir);
}

// An entry's own teachers equal the same teachers given in ppo: for every entry (here the only one), bit for bit;
// an entry's own cloning weight replaces ppo:'s for its games.
TEST(EntryTeachers, OverrideThePpoSectionForTheirEntryOnly) {
  const std::string dir = learntest::TempDir("entry-teachers");
  const std::string one_entry = "train: [{family: ptb, seeds: {from: 1, count: 2}, target_ops: 120";
  const std::string global =
      learntest::WriteTinyExperiment(dir + "/global", 2, {{"ppo: {", "ppo: {demonstrations: [expert], demonstration_coef: 2, "}});
  const std::string own = learntest::WriteTinyExperiment(dir + "/own", 2, {{one_entry, one_entry + ", demonstrations: [expert], demonstration_coef: 2"}});
  std::vector<std::string> messages;
  Expected<TrainSummary> a = Train(global, dir + "/global/run");
  ASSERT_TRUE(a.ok()) << a.error().message;
  Expected<TrainSummary> b = Train(own, dir + "/own/run", 0, &messages);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ExpectSameRuns(*a, *b, global);
  bool said = false;
  for (const std::string& m : messages) said |= m.find("demonstrations on 2 of 2 games (expert best on 2") == 0;
  EXPECT_TRUE(said);

  const std::string no_cloning =
      learntest::WriteTinyExperiment(dir + "/zero", 2, {{"ppo: {", "ppo: {demonstrations: [expert], demonstration_coef: 2, "},
                                     {one_entry, one_entry + ", demonstration_coef: 0"}});
  const std::string replay = learntest::WriteTinyExperiment(dir + "/replay", 2, {{"ppo: {", "ppo: {demonstrations: [expert], "}});
  Expected<TrainSummary> c = Train(no_cloning, dir + "/zero/run");
  ASSERT_TRUE(c.ok()) << c.error().message;
  Expected<TrainSummary> d = Train(replay, dir + "/replay/run");
  ASSERT_TRUE(d.ok()) << d.error().message;
  ExpectSameRuns(*c, *d, replay);  // the entry's weight 0 is ppo: without cloning ...
  EXPECT_FALSE(SameParameters(a->checkpoint_dir, c->checkpoint_dir, global));  // ... which differs from weight 2

  // Teachers on one of two entries: only its games get a demonstration.
  const std::string split = learntest::WriteTinyExperiment(dir + "/split", 1,
                                        {{one_entry, "train: [{family: ptb, seed: 1, target_ops: 120, demonstrations: "
                                                     "[expert]}, {family: ptb, seed: 2, target_ops: 120"}});
  messages.clear();
  ASSERT_TRUE(Train(split, dir + "/split/run", 0, &messages).ok());
  said = false;
  for (const std::string& m : messages) said |= m.find("demonstrations on 1 of 2 games") == 0;
  EXPECT_TRUE(said);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devplace

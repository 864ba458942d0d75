// The config readers: experiments, compare and validate suites, checkpoint sidecars, and what they share (graph
// lists, path resolution against the config's folder, name checks, one-line errors naming file and field).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/checkpoint_meta.h"
#include "core/sha256.h"
#include "config/compare_suite.h"
#include "config/experiment_config.h"
#include "config/validate_suite.h"
#include "core/reshard_suite.h"

namespace devplace {
namespace {

const std::string kExperiment = "name: e\ntopologies: [t.yaml]\ntrain: [{zoo: gnmt2}]\n";

// The error of `config`, which must not parse.
template <typename T>
std::string ErrorOf(const Expected<T>& config) {
  EXPECT_FALSE(config.ok());
  return config.ok() ? "" : config.error().message;
}

TEST(ExperimentConfig, ExpandsSeedRangesAndRejectsUnknownKeys) {
  Expected<ExperimentConfig> c = ExperimentConfigFromYaml(
      "name: e\ntopologies: [t.yaml]\ntrain: [{family: nmt, seeds: {from: 4, count: 3}, target_ops: 200}, {zoo: gnmt2}]\n"
      "ppo: {iterations: 5}\n",
      "e.yaml", "");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->train.size(), 4u);
  EXPECT_EQ(c->train[2].seed, 6u);
  EXPECT_EQ(c->train[0].label(), "nmt-s4-n200");
  EXPECT_EQ(c->ppo.iterations, 5);
  EXPECT_EQ(c->env.kind, MdpKind::kOneShot);  // an experiment's default MDP is the transformer's
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "ppo: {iteratons: 5}\n", "e.yaml", "")).find("e.yaml: ppo"),
            0u);
  EXPECT_FALSE(ExperimentConfigFromYaml(kExperiment + "env: {kind: iterative}\n", "e.yaml", "").ok());
}

TEST(ExperimentConfig, EnvSectionIsReadIntoEnvConfig) {
  Expected<ExperimentConfig> c = ExperimentConfigFromYaml(
      kExperiment + "env: {kind: iterative, initial_placement: round_robin, oom_penalty: 2.5, data_parallel_action: true,"
                    " sim: {segment_bytes: 1024, max_segments: 3, optimizer_state_factor: 1.0}}\npolicy: {kind: placeto}\n",
      "e.yaml", "");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->env.kind, MdpKind::kIterative);
  EXPECT_EQ(c->env.initial_placement, InitialPlacement::kRoundRobin);
  EXPECT_EQ(c->env.oom_penalty, 2.5);
  EXPECT_TRUE(c->env.data_parallel_action);
  EXPECT_TRUE(c->policy.data_parallel_action);  // the policy's output layer follows the env
  EXPECT_EQ(c->env.sim.segment_bytes, 1024);
  EXPECT_EQ(c->env.sim.max_segments, 3);
  EXPECT_EQ(c->env.sim.optimizer_state_factor, 1.0);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "env: {kind: greedy}\n", "e.yaml", "")),
            "e.yaml: env.kind: expected one_shot or iterative, not 'greedy'");
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "env: {sim: {segment_bytes: 0}}\n", "e.yaml", ""))
                .find("e.yaml: env.sim.segment_bytes"),
            0u);
}

TEST(ExperimentConfig, SoapActionSpaceReachesThePolicyAndExcludesTheDataParallelFlagAndPlaceto) {
  Expected<ExperimentConfig> c = ExperimentConfigFromYaml(kExperiment + "env: {action_space: soap}\n", "e.yaml", "");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->env.action_space, ActionSpace::kSoap);
  EXPECT_TRUE(c->policy.soap);
  EXPECT_FALSE(ExperimentConfigFromYaml(kExperiment, "e.yaml", "")->policy.soap);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "env: {action_space: flexflow}\n", "e.yaml", "")),
            "e.yaml: env.action_space: expected devices or soap, not 'flexflow'");
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "env: {action_space: soap, data_parallel_action: true}\n",
                                             "e.yaml", ""))
                .find("e.yaml: env.data_parallel_action: must be false with action_space soap"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(
                        kExperiment + "env: {kind: iterative, action_space: soap}\npolicy: {kind: placeto}\n", "e.yaml", ""))
                .find("e.yaml: policy: env.action_space soap needs policy.kind transformer"),
            0u);
  // The candidate columns a policy reads: the first feature set by default (older checkpoints), the second, or all.
  EXPECT_EQ(c->policy.candidate_features, kCandidateFeatureDimV1);
  EXPECT_EQ(ExperimentConfigFromYaml(kExperiment + "policy: {candidate_features: 19}\n", "e.yaml", "")
                ->policy.candidate_features,
            kCandidateFeatureDimV2);
  EXPECT_EQ(ExperimentConfigFromYaml(kExperiment + "policy: {candidate_features: 22}\n", "e.yaml", "")
                ->policy.candidate_features,
            kCandidateFeatureDim);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "policy: {candidate_features: 16}\n", "e.yaml", ""))
                .find("e.yaml: policy.candidate_features: expected 14, 19 or 22"),
            0u);
  // The layer split head: off by default, the transformer's only.
  EXPECT_FALSE(c->policy.layer_split);
  EXPECT_TRUE(ExperimentConfigFromYaml(kExperiment + "policy: {layer_split: true}\n", "e.yaml", "")->policy.layer_split);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(
                kExperiment + "env: {kind: iterative}\npolicy: {kind: placeto, layer_split: true}\n", "e.yaml", "")),
            "e.yaml: policy.layer_split: only the transformer policy has it");
  EXPECT_FALSE(c->policy.coherence);
  EXPECT_TRUE(ExperimentConfigFromYaml(kExperiment + "policy: {coherence: true}\n", "e.yaml", "")->policy.coherence);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(
                kExperiment + "env: {kind: iterative}\npolicy: {kind: placeto, coherence: true}\n", "e.yaml", "")),
            "e.yaml: policy.coherence: only the transformer policy has it");
  EXPECT_EQ(c->policy.coherence_passes, 1);
  EXPECT_EQ(ExperimentConfigFromYaml(kExperiment + "policy: {coherence: true, coherence_passes: 2}\n", "e.yaml", "")
                ->policy.coherence_passes,
            2);
  EXPECT_NE(ErrorOf(ExperimentConfigFromYaml(kExperiment + "policy: {coherence_passes: 0}\n", "e.yaml", ""))
                .find("policy.coherence_passes"),
            std::string::npos);
  EXPECT_FALSE(c->policy.draft_cost);
  EXPECT_TRUE(ExperimentConfigFromYaml(kExperiment + "policy: {coherence: true, draft_cost: true}\n", "e.yaml", "")
                  ->policy.draft_cost);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "policy: {draft_cost: true}\n", "e.yaml", "")),
            "e.yaml: policy.draft_cost: needs coherence: true (it weighs the first pass's actions)");
  EXPECT_FALSE(c->policy.expert_hint);
  EXPECT_TRUE(
      ExperimentConfigFromYaml(kExperiment + "policy: {expert_hint: true}\n", "e.yaml", "")->policy.expert_hint);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(
                kExperiment + "env: {kind: iterative}\npolicy: {kind: placeto, expert_hint: true}\n", "e.yaml", "")),
            "e.yaml: policy.expert_hint: only the transformer policy has it");
  EXPECT_FALSE(c->policy.strategy_context);
  EXPECT_TRUE(ExperimentConfigFromYaml(kExperiment + "policy: {expert_hint: true, strategy_context: true}\n", "e.yaml",
                                       "")
                  ->policy.strategy_context);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "policy: {strategy_context: true}\n", "e.yaml", "")),
            "e.yaml: policy.strategy_context: needs expert_hint: true (it simulates the expert's placement)");
}

TEST(ExperimentConfig, RejectsUnknownNamesAndMoreMinibatchesThanGraphs) {
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{family: nmtt, seed: 1}]\n",
                                             "e.yaml", ""))
                .find("e.yaml: train[0].family: unknown family 'nmtt' (known: "),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "eval: [{zoo: gnmt3}]\n", "e.yaml", ""))
                .find("e.yaml: eval[0].zoo: unknown zoo model 'gnmt3'"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "ppo: {graphs_per_iteration: 2, minibatches: 3}\n",
                                             "e.yaml", ""))
                .find("e.yaml: ppo.minibatches: must be <= ppo.graphs_per_iteration (2)"),
            0u);
  EXPECT_TRUE(ExperimentConfigFromYaml(kExperiment + "ppo: {graphs_per_iteration: 3, minibatches: 3}\n", "e.yaml", "")
                  .ok());
  // Zero iterations would write a run directory holding an untrained policy and exit 0.
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "ppo: {iterations: 0}\n", "e.yaml", ""))
                .find("e.yaml: ppo.iterations: "),
            0u);
  // Refining demonstrations needs demonstrations to refine.
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "ppo: {demonstration_refine_groups: 8}\n", "e.yaml", ""))
                .find("e.yaml: ppo.demonstration_refine_groups: needs ppo.demonstrations"),
            0u);
  EXPECT_EQ(ExperimentConfigFromYaml(kExperiment + "ppo: {demonstrations: [expert], demonstration_refine_groups: 8}\n",
                                     "e.yaml", "")
                ->ppo.demonstration_refine_groups,
            8);
  // The advantage baseline: the value head by default, the greedy placement on request (one-shot MDP only).
  EXPECT_EQ(ExperimentConfigFromYaml(kExperiment, "e.yaml", "")->ppo.baseline, PpoConfig::Baseline::kValue);
  EXPECT_EQ(ExperimentConfigFromYaml(kExperiment + "ppo: {baseline: greedy}\n", "e.yaml", "")->ppo.baseline,
            PpoConfig::Baseline::kGreedy);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "ppo: {baseline: mean}\n", "e.yaml", ""))
                .find("e.yaml: ppo.baseline: expected value or greedy, not 'mean'"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "env: {kind: iterative}\npolicy: {kind: placeto}\n"
                                                           "ppo: {baseline: greedy}\n",
                                             "e.yaml", ""))
                .find("e.yaml: ppo.baseline: greedy needs the one_shot environment"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{zoo: gnmt2}, {zoo: vgg16, seed: 2}]\n",
                                             "e.yaml", ""))
                .find("e.yaml: train[1].seeds: only family entries take seeds"),
            0u);
}

// A train entry may name its own teachers; the keys it gives override the ppo: section's for its games only.
TEST(ExperimentConfig, TrainEntriesNameTheirOwnTeachers) {
  Expected<ExperimentConfig> c = ExperimentConfigFromYaml(
      "name: e\ntopologies: [t.yaml]\n"
      "train: [{family: nmt, seeds: {from: 0, count: 2}}, {zoo: rnnlm2, demonstrations: [expert, tofu-dp], "
      "demonstration_refine_groups: 8}, {zoo: rnnlm4, demonstration_coef: 0.25}, {zoo: gnmt2, demonstrations: []}]\n"
      "ppo: {demonstrations: [data-parallel], demonstration_coef: 0.5}\n",
      "e.yaml", "");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->train.size(), 5u);
  ASSERT_EQ(c->train_demonstrations.size(), 5u);
  for (size_t i : {0u, 1u}) {  // both seeds of the first entry take the ppo: section's teachers
    const Teachers t = c->TrainTeachers(i);
    EXPECT_EQ(t.algorithms, std::vector<std::string>{"data-parallel"});
    EXPECT_EQ(t.coef, 0.5);
    EXPECT_EQ(t.refine_groups, 0);
  }
  const Teachers rnnlm2 = c->TrainTeachers(2);
  EXPECT_EQ(rnnlm2.algorithms, (std::vector<std::string>{"expert", "tofu-dp"}));
  EXPECT_EQ(rnnlm2.coef, 0.5);  // not given: the ppo: section's
  EXPECT_EQ(rnnlm2.refine_groups, 8);
  const Teachers rnnlm4 = c->TrainTeachers(3);
  EXPECT_EQ(rnnlm4.algorithms, std::vector<std::string>{"data-parallel"});
  EXPECT_EQ(rnnlm4.coef, 0.25);
  EXPECT_TRUE(c->TrainTeachers(4).algorithms.empty());  // demonstrations: [] gives the entry none
  // Without entry keys nothing changes: every source takes the ppo: section's.
  Expected<ExperimentConfig> plain = ExperimentConfigFromYaml(kExperiment + "ppo: {demonstrations: [expert]}\n", "e.yaml", "");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->TrainTeachers(0).algorithms, std::vector<std::string>{"expert"});
  // Errors name the file and the entry's field.
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{zoo: gnmt2}, "
                                             "{zoo: rnnlm2, demonstration_refine_groups: 4}]\n",
                                             "e.yaml", ""))
                .find("e.yaml: train[1].demonstration_refine_groups: needs demonstrations"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{zoo: rnnlm2, demonstrations: "
                                             "[expert]}]\nenv: {kind: iterative}\npolicy: {kind: placeto}\n",
                                             "e.yaml", ""))
                .find("e.yaml: train[0].demonstrations: only the one_shot environment"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{zoo: rnnlm2}]\nenv: {kind: "
                                             "iterative}\npolicy: {kind: placeto}\nppo: {demonstrations: [expert]}\n",
                                             "e.yaml", ""))
                .find("e.yaml: ppo.demonstrations: only the one_shot environment"),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{zoo: rnnlm2, demonstrations: "
                                             "expert}]\n",
                                             "e.yaml", ""))
                .find("e.yaml: train[0].demonstrations: "),
            0u);
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml("name: e\ntopologies: [t.yaml]\ntrain: [{zoo: rnnlm2, "
                                             "demonstration_coef: -1}]\n",
                                             "e.yaml", ""))
                .find("e.yaml: train[0].demonstration_coef: "),
            0u);
  // Only training entries take teachers.
  EXPECT_EQ(ErrorOf(ExperimentConfigFromYaml(kExperiment + "eval: [{zoo: rnnlm2, demonstrations: [expert]}]\n",
                                             "e.yaml", ""))
                .find("e.yaml: eval[0].demonstrations: unknown field"),
            0u);
}

// A scratch folder holding a config folder and a decoy file of the same name in the working directory.
class ConfigPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("devplace-config-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "cfg");
    Write(root_ / "t.yaml", "decoy in the working directory\n");
    previous_ = std::filesystem::current_path();
    std::filesystem::current_path(root_);
  }
  void TearDown() override {
    std::filesystem::current_path(previous_);
    std::filesystem::remove_all(root_);
  }
  static void Write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

  std::filesystem::path root_, previous_;
};

TEST_F(ConfigPaths, ExperimentPathsAreRelativeToTheConfigFolderNotTheWorkingDirectory) {
  Write(root_ / "cfg" / "e.yaml", "name: e\ntopologies: [t.yaml]\ntrain: [{file: g.json}]\n");
  Expected<ExperimentConfig> c = ReadExperimentConfig("cfg/e.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->topologies[0], (root_ / "cfg" / "t.yaml").string());  // not the decoy ./t.yaml
  EXPECT_EQ(c->train[0].file, (root_ / "cfg" / "g.json").string());
  EXPECT_EQ(c->base_dir, (root_ / "cfg").string());  // absolute: a resumed run finds them from any directory
  EXPECT_TRUE(c->ppo.init_policy.empty());
  Write(root_ / "cfg" / "w.yaml", "name: w\ntopologies: [t.yaml]\ntrain: [{zoo: gnmt2}]\nppo: {init_policy: ../models/p}\n");
  Expected<ExperimentConfig> w = ReadExperimentConfig("cfg/w.yaml");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->ppo.init_policy, (root_ / "models" / "p").string());  // a warm start's policy, like a topology
  Write(root_ / "cfg" / "x.yaml", "name: x\ntopologies: [t.yaml]\ntrain: [{zoo: gnmt2}]\nppo: {init_policy: ''}\n");
  EXPECT_EQ(ErrorOf(ReadExperimentConfig("cfg/x.yaml")).find("cfg/x.yaml: ppo.init_policy: must not be empty"), 0u);
}

TEST_F(ConfigPaths, SuitePathsAreRelativeToTheSuiteFolder) {
  Write(root_ / "cfg" / "s.yaml",
        "name: s\nmodels: [{file: ../g.json}, {family: nmt, seeds: [1, 2]}]\ntopologies: [t.yaml]\nalgorithms: [m-etf]\n");
  Expected<CompareSuite> s = ReadCompareSuite("cfg/s.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->topologies[0], (root_ / "cfg" / "t.yaml").string());
  EXPECT_EQ(s->models[0].file, (root_ / "g.json").string());
  ASSERT_EQ(s->models.size(), 3u);  // suites take seed lists like experiments
  EXPECT_EQ(s->models[2].label(), "nmt-s2");
  Write(root_ / "cfg" / "v.yaml", "name: v\ntopology: /abs/t.yaml\nmodels: [{zoo: vgg16}]\nrandom_placements: 1\n");
  Expected<ValidateSuite> v = ReadValidateSuite("cfg/v.yaml");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->topology, "/abs/t.yaml");
}

TEST(ShippedConfigs, ReadAndNameExistingFiles) {
  for (const auto& dir : {"configs/experiments", "configs/suites"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(DEVPLACE_SOURCE_DIR) / dir)) {
      const std::string path = entry.path().string();
      std::vector<std::string> files;
      if (std::string(dir) == "configs/experiments") {
        Expected<ExperimentConfig> c = ReadExperimentConfig(path);
        ASSERT_TRUE(c.ok()) << c.error().message;
        files = c->topologies;
        if (!c->ppo.init_policy.empty()) files.push_back(c->ppo.init_policy + "/state.json");
      } else if (entry.path().filename().string().rfind("reshard", 0) == 0) {
        Expected<ReshardSuite> r = ReadReshardSuiteFile(path);  // cross-mesh resharding cases (devplace reshard)
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_FALSE(r->cases.empty()) << path;
      } else if (entry.path().filename().string().rfind("validate", 0) == 0) {
        Expected<ValidateSuite> v = ReadValidateSuite(path);
        ASSERT_TRUE(v.ok()) << v.error().message;
        files = {v->topology};
      } else {
        Expected<CompareSuite> s = ReadCompareSuite(path);
        ASSERT_TRUE(s.ok()) << s.error().message;
        files = s->topologies;
        for (const GraphSource& m : s->models)
          if (!m.file.empty()) files.push_back(m.file);
      }
      for (const std::string& f : files) EXPECT_TRUE(std::filesystem::exists(f)) << path << " names " << f;
    }
  }
}

TEST(CompareSuite, RejectsBadSuites) {
  const std::string base = "name: s\ntopologies: [t.yaml]\nalgorithms: [m-etf]\n";
  EXPECT_TRUE(CompareSuiteFromYaml(base + "models: [{zoo: vgg16, batch: 32}]\n", "s.yaml", "").ok());
  EXPECT_EQ(ErrorOf(CompareSuiteFromYaml(base + "models: [{zoo: vgg61}]\n", "s.yaml", "")).find("s.yaml: models[0].zoo"),
            0u);
  EXPECT_EQ(ErrorOf(CompareSuiteFromYaml(base + "models: [{family: nmt, batch: 2}]\n", "s.yaml", ""))
                .find("s.yaml: models[0].batch: only zoo entries take a batch"),
            0u);
  EXPECT_EQ(ErrorOf(CompareSuiteFromYaml(base + "models: []\n", "s.yaml", "")), "s.yaml: models: must not be empty");
  // Control characters from the input (a key holding a newline; yaml-cpp quoting a bad escape) stay on one line
  // (found by compare_suite_reader_fuzzer and topology_yaml_reader_fuzzer).
  EXPECT_EQ(ErrorOf(CompareSuiteFromYaml(base + "models: [{zoo: vgg16}]\nbudget: {\"evalu\\nations\": 3}\n", "s.yaml", "")),
            "s.yaml: budget.evalu\\x0aations: unknown field (expected one of: evaluations, seconds)");
  std::string nul = base + "models: [{zoo: vgg16}]\nseed: 1";
  nul += std::string(1, '\0') + "\n";
  const std::string yaml_error = ErrorOf(CompareSuiteFromYaml(nul, "s.yaml", ""));
  EXPECT_EQ(yaml_error.find('\n'), std::string::npos) << yaml_error;
  EXPECT_NE(yaml_error.find("invalid YAML: unknown escape character: \\x0a"), std::string::npos) << yaml_error;
  EXPECT_EQ(ErrorOf(CompareSuiteFromYaml(base + "models: [{zoo: vgg16}]\nbudget: {evaluations: -1}\n", "s.yaml", ""))
                .find("s.yaml: budget.evaluations"),
            0u);
}

TEST(ValidateSuite, ReadsTheShippedSuite) {
  Expected<ValidateSuite> suite = ReadValidateSuite(DEVPLACE_SOURCE_DIR "/configs/suites/validate-cpu.yaml");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  EXPECT_EQ(suite->name, "validate-cpu");
  EXPECT_TRUE(suite->calibrate);
  EXPECT_FALSE(suite->profile_isolated);
  EXPECT_GE(suite->models.size(), 3u);
  EXPECT_GE(suite->models.size() * (suite->algorithms.size() + suite->random_placements), 20u);
}

TEST(ValidateSuite, RejectsBadSuites) {
  const std::string base = "name: v\ntopology: t.yaml\nmodels: [{zoo: resnet50}]\n";
  EXPECT_TRUE(ValidateSuiteFromYaml(base + "algorithms: [single]\n", "v.yaml", "").ok());
  EXPECT_NE(ErrorOf(ValidateSuiteFromYaml(base + "algorithms: [single]\ncolour: red\n", "v.yaml", "")).find("colour"),
            std::string::npos);
  EXPECT_FALSE(ValidateSuiteFromYaml(base, "v.yaml", "").ok());  // nothing to place with
  EXPECT_NE(ErrorOf(ValidateSuiteFromYaml(base + "random_placements: 2\nprofile: {mode: fast}\n", "v.yaml", ""))
                .find("profile.mode"),
            std::string::npos);
  EXPECT_FALSE(ValidateSuiteFromYaml(base + "random_placements: 2\nexec: {timed_steps: 0}\n", "v.yaml", "").ok());
  Expected<ValidateSuite> sharded =
      ValidateSuiteFromYaml(base + "shardings: [{spec: s.yaml, mesh: \"2\"}]\n", "v.yaml", "/suites");
  ASSERT_TRUE(sharded.ok()) << sharded.error().message;  // a sharding alone is something to run
  ASSERT_EQ(sharded->shardings.size(), 1u);
  EXPECT_EQ(sharded->shardings[0].spec, "/suites/s.yaml");
  EXPECT_EQ(sharded->shardings[0].mesh, "2");
  EXPECT_NE(ErrorOf(ValidateSuiteFromYaml(base + "shardings: [{file: s.yaml}]\n", "v.yaml", "")).find("shardings[0]"),
            std::string::npos);
  Expected<ValidateSuite> piped =
      ValidateSuiteFromYaml(base + "pipelines: [{stages: 3, microbatches: 8, schedule: eager-1f1b}, {}]\n",
                            "v.yaml", "");
  ASSERT_TRUE(piped.ok()) << piped.error().message;  // a pipeline alone is something to run
  ASSERT_EQ(piped->pipelines.size(), 2u);
  EXPECT_EQ(piped->pipelines[0].stages, 3);
  EXPECT_EQ(piped->pipelines[0].microbatches, 8);
  EXPECT_EQ(piped->pipelines[0].schedule, "eager-1f1b");
  EXPECT_EQ(piped->pipelines[1].schedule, "1f1b");
  EXPECT_NE(ErrorOf(ValidateSuiteFromYaml(base + "pipelines: [{schedule: zigzag}]\n", "v.yaml", ""))
                .find("pipelines[0].schedule"),
            std::string::npos);
}

TEST(ValidateSuite, ReadsMultiProcessRows) {
  Expected<ValidateSuite> shipped =
      ReadValidateSuite(DEVPLACE_SOURCE_DIR "/configs/suites/validate-cpu-multiprocess.yaml");
  ASSERT_TRUE(shipped.ok()) << shipped.error().message;
  EXPECT_EQ(shipped->processes, 2);
  EXPECT_TRUE(shipped->process_topology.empty());
  const std::string base = "name: v\ntopology: t.yaml\nmodels: [{zoo: resnet50}]\nalgorithms: [expert]\n";
  Expected<ValidateSuite> given =
      ValidateSuiteFromYaml(base + "multi_process: {processes: 4, topology: t4.yaml}\n", "v.yaml", "/suites");
  ASSERT_TRUE(given.ok()) << given.error().message;
  EXPECT_EQ(given->processes, 4);
  EXPECT_EQ(given->process_topology, "/suites/t4.yaml");
  EXPECT_EQ(ValidateSuiteFromYaml(base, "v.yaml", "")->processes, 1);
  EXPECT_NE(ErrorOf(ValidateSuiteFromYaml(base + "multi_process: {processes: 1}\n", "v.yaml", ""))
                .find("multi_process.processes"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ValidateSuiteFromYaml(base + "multi_process: {ranks: 2}\n", "v.yaml", "")).find("ranks"),
            std::string::npos);
}

TEST(CheckpointMeta, RoundTripsAndRejectsGarbage) {
  CheckpointMeta m;
  m.iteration = 12;
  m.evaluations = 345;
  m.wall_seconds = 6.5;
  m.rng_state = "1 2 3";
  m.config_yaml = "name: x\n";
  m.model_file = "model-12.pt";
  m.model_bytes = 4;
  m.model_sha256 = Sha256Hex("PK\x03\x04");
  m.best_relative_times = {0.5, 0.25};
  const std::string json = CheckpointMetaToJson(m);
  Expected<CheckpointMeta> back = CheckpointMetaFromJson(json, "state.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->iteration, 12);
  EXPECT_EQ(back->best_relative_times, m.best_relative_times);
  EXPECT_EQ(back->config_yaml, m.config_yaml);
  EXPECT_EQ(back->model_bytes, 4);
  EXPECT_EQ(back->model_sha256, m.model_sha256);
  Expected<CheckpointMeta> bad = CheckpointMetaFromJson("{\"iteration\": 1}", "state.json");
  EXPECT_EQ(ErrorOf(bad).find("state.json"), 0u);
  // A fresh run's start-up state (rank 0 sends it to its group) names no files and so carries no digests.
  CheckpointMeta fresh;
  fresh.config_yaml = "name: x\n";
  EXPECT_TRUE(CheckpointMetaFromJson(CheckpointMetaToJson(fresh), "start-up").ok());
  // The format, the version and the digests are checked.
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = json;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return CheckpointMetaFromJson(text.replace(at, from.size(), to), "state.json");
  };
  EXPECT_EQ(ErrorOf(edited("\"version\": 1", "\"version\": 2")),
            "state.json: version: 2 is not a checkpoint version this devplace reads (1)");
  EXPECT_EQ(ErrorOf(edited("devplace.checkpoint", "devplace.graph")),
            "state.json: format: expected 'devplace.checkpoint', not 'devplace.graph'");
  EXPECT_EQ(ErrorOf(edited(m.model_sha256, "abc")),
            "state.json: model_sha256: expected a SHA-256 digest (64 lowercase hex digits)");
  EXPECT_EQ(ErrorOf(edited("\"optimizer_file\": \"\"", "\"optimizer_file\": \"o.pt\"")),
            "state.json: optimizer_bytes: missing required field");
}

TEST(EnsembleMeta, ReadsMembersAndRejectsBadFiles) {
  Expected<EnsembleMeta> good = EnsembleMetaFromJson(
      R"({"format": "devplace.ensemble", "version": 1, "members": ["seed2", "../other/ckpt"]})", "ensemble.json");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->members, (std::vector<std::string>{"seed2", "../other/ckpt"}));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"format": "devplace.checkpoint", "version": 1, "members": ["a", "b"]})",
       "ensemble.json: format: expected 'devplace.ensemble', not 'devplace.checkpoint'"},
      {R"({"format": "devplace.ensemble", "version": 2, "members": ["a", "b"]})",
       "ensemble.json: version: 2 is not an ensemble version this devplace reads (1)"},
      {R"({"format": "devplace.ensemble", "version": 1, "members": ["a"]})",
       "ensemble.json: members: an ensemble needs at least two members"},
      {R"({"format": "devplace.ensemble", "version": 1, "members": ["a", ""]})",
       "ensemble.json: members[1]: an empty directory name"},
      {R"({"format": "devplace.ensemble", "version": 1, "members": ["a", 3]})", "ensemble.json: members[1]: "},
      {R"({"format": "devplace.ensemble", "version": 1, "members": "a"})", "ensemble.json: members: "},
      {R"({"format": "devplace.ensemble", "version": 1, "members": ["a", "b"], "weights": [1, 2]})",
       "ensemble.json: weights: unknown field"},
      {R"({"format": "devplace.ensemble", "version": 1, "members": ["a", "b"])", "ensemble.json: invalid JSON"},
  };
  for (const auto& [text, message] : bad) {
    Expected<EnsembleMeta> parsed = EnsembleMetaFromJson(text, "ensemble.json");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().message.rfind(message, 0), 0u) << parsed.error().message;
  }
}

// A checkpoint's tensor file is checked against its sidecar's size and digest before LibTorch sees it.
TEST(CheckpointMeta, VerifiesTheTensorFilesBytes) {
  const std::string bytes = std::string("PK\x03\x04") + "parameters";
  const std::string digest = Sha256Hex(bytes);
  EXPECT_TRUE(VerifyCheckpointFile(bytes, "m.pt", 14, digest).ok());
  EXPECT_EQ(VerifyCheckpointFile(bytes.substr(0, 9), "m.pt", 14, digest).error().message,
            "m.pt: truncated: 9 bytes, its state.json records 14");
  EXPECT_EQ(VerifyCheckpointFile(bytes + "x", "m.pt", 14, digest).error().message,
            "m.pt: corrupted: 15 bytes, its state.json records 14");
  std::string flipped = bytes;
  flipped[7] ^= 1;
  EXPECT_EQ(VerifyCheckpointFile(flipped, "m.pt", 14, digest).error().message,
            "m.pt: corrupted: its SHA-256 differs from the one its state.json records");
  const std::string text = "not a zip file";
  EXPECT_EQ(VerifyCheckpointFile(text, "m.pt", 14, Sha256Hex(text)).error().message,
            "m.pt: not a LibTorch archive (no zip header)");
}

}  // namespace
}  // namespace devplace

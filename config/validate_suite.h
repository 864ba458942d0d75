// A validation suite (configs/suites/validate*.yaml): which models, machine and placement algorithms
// `devplace validate` runs to compare the simulator's step times with the executor's measured ones.
// Format in docs/executor.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/graph_source.h"

namespace devplace {

// A sharding spec file applied to every model (`devplace shard`'s propagation and lowering), with an optional mesh
// shape replacing the spec's ("2", "2x1"; empty: the spec's own).
struct SuiteSharding {
  std::string spec;  // path, resolved like the topology
  std::string mesh;
};

// A pipeline row generated for every model (workflows/validate_pipeline.h EvenPipeline): the forward layers cut into
// `stages` contiguous stages of similar FLOPs, each on an equal block of the machine's devices.
struct SuitePipeline {
  int32_t stages = 2;
  int32_t microbatches = 2;
  std::string schedule = "1f1b";  // gpipe, 1f1b or eager-1f1b
};

struct ValidateSuite {
  std::string name;
  uint64_t seed = 0;
  std::string topology;              // topology YAML path (resolved like CompareSuite paths)
  bool calibrate = true;             // measure links and devices first and simulate on the calibrated machine
  int32_t warmup_steps = 2;          // executor: untimed and timed steps per strategy and round
  int32_t timed_steps = 5;
  int32_t rounds = 1;                // the strategies of a model are executed in turn this many times (so that a
                                     // change in the machine's load affects them all alike); medians over all
  bool profile_isolated = false;     // profiler: time each op alone (else within single-device steps)
  int32_t profile_warmup_runs = 2;   // profiler: untimed and timed steps (isolated: runs per op signature)
  int32_t profile_timed_runs = 7;
  int64_t budget_evaluations = 0;    // per search (<= 0: the algorithm's default)
  double budget_seconds = 0.0;
  std::vector<GraphSource> models;
  std::vector<std::string> algorithms;  // placement and partitioning algorithms (agents/search.h)
  int32_t random_placements = 0;        // plus this many random placements per model (seeds seed, seed + 1, ...)
  std::vector<SuiteSharding> shardings;  // plus one strategy per sharding spec per model
  std::vector<SuitePipeline> pipelines;  // plus one pipeline plan per entry per model
  // multi_process: every strategy above whose ops span several devices also runs as `processes` processes over
  // c10d (a row "<strategy> xNp") when RankOfDevices can map them (one per device, per host, or per device used);
  // 1: none. Such rows are simulated on
  // `process_topology` when given (e.g. written by `devplace calibrate --processes N`), else on the suite's machine.
  int32_t processes = 1;
  std::string process_topology;
  std::string source;                   // the file it was read from (errors about its entries name it)
  std::string base_dir;                 // absolute folder of the suite file
};

// Reads a suite; relative paths are relative to the suite file's folder. Errors read "<file>: <field>: <reason>",
// unknown keys are rejected.
Expected<ValidateSuite> ReadValidateSuite(const std::string& path);
// The same from text: `source` names it in errors, `suite_dir` is what relative paths are resolved against.
Expected<ValidateSuite> ValidateSuiteFromYaml(const std::string& text, const std::string& source,
                                              const std::string& suite_dir);

}  // namespace devplace

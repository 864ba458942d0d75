// A comparison suite (configs/suites/*.yaml): which models, machines and algorithms `devplace compare` runs,
// with one search budget and seed for every cell. Format in docs/compare.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/graph_source.h"

namespace devplace {

struct CompareSuite {
  std::string name;
  uint64_t seed = 0;
  int64_t budget_evaluations = 0;  // per search; <= 0: unlimited
  double budget_seconds = 0.0;     // per search; <= 0: unlimited
  std::string baseline = "expert"; // the algorithm improvements are measured against
  std::vector<GraphSource> models;      // the graph-list syntax of config/reader_util.h
  std::vector<std::string> topologies;  // topology YAML paths, resolved against `base_dir`
  std::vector<std::string> algorithms;
  std::string source;                   // the file it was read from (errors about its entries name it)
  std::string base_dir;                 // absolute folder of the suite file; relative paths are resolved against it
};

// Reads a suite; relative paths are relative to the suite file's folder. Unknown keys are rejected; errors read
// "<file>: <field>: <reason>".
Expected<CompareSuite> ReadCompareSuite(const std::string& path);
// The same from text: `source` names it in errors, `suite_dir` is what relative paths are resolved against.
Expected<CompareSuite> CompareSuiteFromYaml(const std::string& text, const std::string& source,
                                            const std::string& suite_dir);

}  // namespace devplace

// A comparison suite (configs/suites/*.yaml): which models, machines and algorithms `devplace compare` runs,
// with one search budget and seed for every cell. Format in docs/compare.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace devplace {

// Where a model comes from: exactly one of zoo (with optional batch), family (with seed and optional target_ops),
// or a graph file.
struct SuiteModel {
  std::string zoo;
  int64_t batch = 0;
  std::string family;
  uint64_t seed = 0;
  int32_t target_ops = 0;
  std::string file;

  // A short label for tables, e.g. "resnet50", "nmt-s3", or the file's stem.
  std::string label() const;
};

struct CompareSuite {
  std::string name;
  uint64_t seed = 0;
  int64_t budget_evaluations = 0;  // per search; <= 0: unlimited
  double budget_seconds = 0.0;     // per search; <= 0: unlimited
  std::string baseline = "expert"; // the algorithm improvements are measured against
  std::vector<SuiteModel> models;
  std::vector<std::string> topologies;  // topology YAML paths, relative paths resolved against `base_dir`
  std::vector<std::string> algorithms;
  std::string base_dir;                 // directory relative paths in the suite are resolved against
};

// Reads a suite; relative file paths are resolved against the repository-style base directory: the current
// directory if the path exists there, else the suite file's directory. Errors: "<file>: <field>: <reason>".
Expected<CompareSuite> ReadCompareSuite(const std::string& path);
Expected<CompareSuite> CompareSuiteFromYaml(const std::string& text, const std::string& source,
                                            const std::string& suite_dir);

}  // namespace devplace

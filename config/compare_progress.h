// The cells of a `devplace compare` run and its progress file (DIR/cells.json, format "devplace.compare-cells",
// version 1): the cells finished so far, rewritten atomically after each one, and a digest of the suite's inputs,
// so that `devplace compare --resume` continues an interrupted run without recomputing finished cells and refuses
// a run of other inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace devplace {

// One cell of a comparison.
struct CompareCell {
  std::string model, topology, algorithm;
  bool ok = false;           // false: the search failed; `error` says why
  std::string error;
  double step_time = 0.0;    // simulated seconds per step
  bool oom = false;
  int64_t evaluations = 0;
  double search_seconds = 0.0;
  bool resumed = false;      // taken from the progress file of an interrupted run, not recomputed (not stored)
};

// What a progress file holds.
struct CompareProgress {
  std::string inputs_sha256;       // digest of the suite's settings, graphs, machines and algorithms
  std::vector<CompareCell> cells;  // the finished cells, in the suite's order
};

// The progress file's JSON text (deterministic; doubles written so that they read back exactly).
std::string CompareProgressToJson(const CompareProgress& progress);
// Parses a progress file; errors read "<source>: <field>: <reason>", unknown keys are rejected.
Expected<CompareProgress> CompareProgressFromJson(const std::string& text, const std::string& source);

}  // namespace devplace

// `devplace compare` as a library call: every (model, topology, algorithm) cell of a suite searched with the suite's
// budget and seed, simulated, and written as DIR/results.csv, results.md and chart.png (workflows/compare_report.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/compare_suite.h"
#include "core/status.h"
#include "workflows/compare_report.h"

namespace devplace {

struct CompareRunOptions {
  std::string output_dir;  // created if missing
  std::string command;     // the command line quoted in results.md
  // Continue the run in output_dir from its progress file (cells.json): the cells it holds are reported as they
  // were (CompareCell::resumed), not recomputed. The file must exist and be of the same inputs.
  bool resume = false;
  // Called before a cell runs (`done` false) and after (`done` true, the cell filled in; a resumed cell gets only
  // this call); may be empty. With several threads, cells start and finish in any order; the calls never overlap.
  std::function<void(size_t index, size_t total, const CompareCell& cell, bool done)> on_cell;
  // Cells of the search baselines run at once, each search on its own thread (0: one per core); the learned
  // searches' cells run one at a time afterwards. Every cell's search has its own seed and state, so the results
  // (all but the search seconds) do not depend on it.
  int32_t threads = 0;
};

struct CompareRun {
  std::vector<CompareCell> cells;  // model-major, then topology, then the suite's algorithm order
  int32_t failed = 0;              // cells whose search, validation or simulation failed
  Status chart;                    // whether chart.png was drawn (gnuplot may be missing)
};

// Runs the suite. Every input is checked before anything is written: an unknown algorithm, a topology or graph
// that does not load is an error naming the suite file and entry (e.g. "s.yaml: algorithms[2]: unknown search
// algorithm 'mcmcc'") and leaves no output directory. A failing cell is recorded in its row, not an error.
// After each cell, output_dir/cells.json (config/compare_progress.h) is rewritten atomically with the cells
// finished so far, so a run killed at any point loses at most the cell it was computing (see `resume`).
// Resuming: "DIR/cells.json: cannot open: ..." when there is nothing to resume, "DIR/cells.json: inputs_sha256:
// the run in DIR is of other inputs ..." when the suite, a graph or a machine changed.
Expected<CompareRun> RunCompareSuite(const CompareSuite& suite, const CompareRunOptions& options);

}  // namespace devplace

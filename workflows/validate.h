// `devplace validate` as a library call: for every model of a validation suite, profile its ops, place it with the
// suite's algorithms and random placements, simulate each strategy with the profiled costs on the (calibrated)
// machine, execute it for real (a model's strategies in turn, for the suite's rounds), and write DIR/results.csv,
// summary.md (MAPE, max error, Kendall tau-b) and scatter.png, plus the calibrated topology and the cost tables.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/validate_suite.h"
#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "exec/executor.h"
#include "workflows/validate_report.h"

namespace devplace {

struct ValidateRunOptions {
  std::string output_dir;  // created if missing
  std::string command;     // the command line quoted in summary.md
  // Receives one human-readable progress line at a time (calibrating, profiling, each row's result); may be empty.
  std::function<void(const std::string& line)> progress;
  // Executes a strategy as `processes` ranks on this machine (the suite's multi_process rows) and returns the
  // whole result (rank 0's); `devplace validate` launches itself (`devplace run --processes N`). Empty: those
  // rows fail, saying that no launcher was given.
  std::function<Expected<ExecResult>(const Graph&, const Topology&, const Strategy&, const ExecOptions&,
                                     int32_t processes)>
      run_processes;
  // Calibrates `processes` ranks on this machine as `devplace calibrate -t TOPOLOGY --processes N -o OUTPUT` does
  // (for a suite with multi_process, calibrate: true and no multi_process.topology) and returns the topology
  // written; the multi-process rows are simulated on it. Empty: they are simulated on the suite's machine.
  std::function<Expected<Topology>(const std::string& topology_path, int32_t processes, const std::string& output)>
      calibrate_processes;
};

struct ValidateRun {
  std::vector<ValidateRow> rows;    // model-major, the suite's algorithms then its random placements
  std::vector<std::string> models;  // labels, in suite order
  int32_t failed = 0;               // rows without numbers (search, execution or simulation failed)
  Status scatter;                   // whether scatter.png was drawn (gnuplot may be missing)
};

// Runs the suite. An unknown algorithm, a topology or graph that does not load is an error naming the suite file
// and entry, found before anything is written. A strategy that fails is recorded in its row, not an error.
Expected<ValidateRun> RunValidateSuite(const ValidateSuite& suite, const ValidateRunOptions& options);

}  // namespace devplace

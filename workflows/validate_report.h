// The outputs of `devplace validate`: the simulator's step time against the executor's measured one for every
// (model, strategy) row, the error statistics (mean absolute percentage error, max error, Kendall's tau-b), and
// the files: results.csv, summary.md and a gnuplot scatter plot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace devplace {

// One executed strategy.
struct ValidateRow {
  std::string model, strategy;
  bool ok = false;
  std::string error;           // why the row has no numbers (search or execution failed)
  double measured = 0.0;       // median step seconds
  double measured_min = 0.0, measured_max = 0.0;
  double simulated = 0.0;      // step seconds
  int32_t copies = 0;          // tensors moved between devices per step
  int64_t bytes_copied = 0;
  int32_t stand_in_ops = 0;
  std::string device_ops;      // ops per device, e.g. "310/298"
  // "placement" (one device per op) or "split" (some op split or copied over devices), with " xNp" when run as N
  // processes.
  std::string kind;
};

// Statistics over the rows that ran.
struct ValidateStats {
  int32_t rows = 0;
  double mape = 0.0;           // mean |simulated - measured| / measured
  double max_error = 0.0;      // max |simulated - measured| / measured
  double mean_error = 0.0;     // mean (simulated - measured) / measured (the bias)
  double kendall_tau = 0.0;    // tau-b between measured and simulated times
};

// Kendall's tau-b of two equally long sequences (ties handled; 0 when fewer than two pairs are comparable).
double KendallTauB(const std::vector<double>& a, const std::vector<double>& b);
// Statistics of the rows of `model` (all rows when empty) and of kind `kind` (all kinds when empty) that ran.
ValidateStats ComputeValidateStats(const std::vector<ValidateRow>& rows, const std::string& model = "",
                                   const std::string& kind = "");

Status WriteValidateCsv(const std::vector<ValidateRow>& rows, const std::string& path);
// `command` is the command line, `machine` a few lines describing the (calibrated) machine.
Status WriteValidateSummary(const std::vector<ValidateRow>& rows, const std::vector<std::string>& models,
                            const std::string& suite_name, const std::string& command, const std::string& machine,
                            const std::string& path);
// Simulated against measured step time, log-log, one point style per model, with the y = x line.
Status WriteValidateScatter(const std::vector<ValidateRow>& rows, const std::vector<std::string>& models,
                            const std::string& dir);

}  // namespace devplace

// The outputs of `devplace compare`: one row per (model, topology, algorithm) cell, written as CSV, a Markdown
// report with a geometric-mean row, and a gnuplot chart.
#pragma once

#include <string>
#include <vector>

#include "config/compare_progress.h"
#include "core/status.h"

namespace devplace {

// Speed-up of `cell` over the baseline algorithm's cell for the same model and topology (baseline time / cell
// time), or 0 when either failed or ran out of memory.
double SpeedupOverBaseline(const std::vector<CompareCell>& cells, const CompareCell& cell, const std::string& baseline);

Status WriteCompareCsv(const std::vector<CompareCell>& cells, const std::string& baseline, const std::string& path);
// `command` is the command line that produced the results, quoted in the report.
Status WriteCompareMarkdown(const std::vector<CompareCell>& cells, const std::vector<std::string>& algorithms,
                            const std::string& baseline, const std::string& suite_name, const std::string& command,
                            const std::string& path);
// Draws the speed-up over the baseline per cell and algorithm with gnuplot (error if gnuplot is missing or fails).
Status WriteCompareChart(const std::vector<CompareCell>& cells, const std::vector<std::string>& algorithms,
                         const std::string& baseline, const std::string& dir);

}  // namespace devplace

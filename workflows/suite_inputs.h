// What the workflows share before they run: the suite's graphs, built up front, and the output folder.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "datasets/graph_source.h"

namespace devplace {

// Builds every graph of a suite's `models` list; an error names the suite file `source` and the entry
// ("s.yaml: models[2]: ...").
Expected<std::vector<Graph>> BuildSuiteGraphs(const std::vector<GraphSource>& models, const std::string& source);

// Creates the output folder `dir` (and its parents) if missing; the error names it.
Status CreateOutputDir(const std::string& dir);

}  // namespace devplace

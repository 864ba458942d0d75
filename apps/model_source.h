// Turns a suite's model reference (zoo name, family member, or graph file) into a graph.
#pragma once

#include "core/compare_suite.h"
#include "core/graph.h"

namespace devplace::cli {

// The graph `model` refers to; throws CliError with the reader's or generator's message.
Graph LoadSuiteModel(const SuiteModel& model);

}  // namespace devplace::cli

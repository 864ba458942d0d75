// Pieces shared by the suite readers (compare suites, validate suites). They throw InputError (core/json_reader.h),
// so they are called inside a reader's CatchInputErrors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/compare_suite.h"
#include "core/json_reader.h"

namespace devplace {

// A path as given if it is absolute or exists relative to the current directory, else relative to `suite_dir`.
std::string ResolveSuitePath(const std::string& path, const std::string& suite_dir);

// Reads the optional `budget: {evaluations, seconds}` of `root` (both >= 0, default 0); absent: both 0.
void ReadSuiteBudget(JsonObject& root, int64_t* evaluations, double* seconds);

// Reads the required, non-empty `models` list of `root`: each exactly one of zoo (+ batch), family (+ seed,
// target_ops) or file (resolved with ResolveSuitePath). Errors name the entry, e.g. "models[2].zoo".
std::vector<SuiteModel> ReadSuiteModels(JsonObject& root, const std::string& suite_dir);

}  // namespace devplace

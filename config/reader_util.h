// Pieces every config reader shares (experiments, compare suites, validate suites): how a relative path in a
// config is resolved, the graph-list syntax, and the search budget. They throw InputError (core/json_reader.h), so
// they are called inside a reader's CatchInputErrors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "datasets/graph_source.h"

namespace devplace {

// `path` unchanged when absolute or when `config_dir` is empty, else `config_dir`/`path`: a relative path in a
// config file names a file relative to that config file's folder, never the working directory.
std::string ResolveConfigPath(const std::string& path, const std::string& config_dir);

// The absolute folder of the config file `path` (what its relative paths are resolved against).
std::string ConfigDirOf(const std::string& path);

// Reads the graph list `key` of `root`. Each entry is exactly one of
//   {family: F, seed: N | seeds: [N, ...] | seeds: {from: A, count: C}, target_ops: T}   (one source per seed)
//   {zoo: NAME, batch: B}
//   {file: PATH}                                                                          (resolved)
// Family and zoo names are checked against the generators and the zoo. Errors name the entry, e.g.
// "models[2].zoo: unknown zoo model 'resnet5' (known: ...)". `required`: the key must be present and non-empty.
// `extend`, when given, is called with each entry before its unknown keys are rejected, so that a reader can take
// keys of its own from it; the entry stands for the `count` sources appended to the list from index `first`.
using GraphEntryExtension = std::function<void(JsonObject& entry, size_t first, size_t count)>;
std::vector<GraphSource> ReadGraphList(JsonObject& root, const std::string& key, const std::string& config_dir,
                                       bool required, const GraphEntryExtension& extend = {});

// Reads the optional `budget: {evaluations, seconds}` of `root` (both >= 0; absent: both 0, i.e. unlimited or
// the algorithm's default).
void ReadSearchBudget(JsonObject& root, int64_t* evaluations, double* seconds);

// Reads the required, non-empty list of strings `key` of `root`.
std::vector<std::string> ReadStringList(JsonObject& root, const std::string& key);

// Reads the config file `path` with `from_yaml(text, source, config_dir)`: the file's text, its path to name in
// errors, and its folder to resolve relative paths against.
template <typename T, typename FromYaml>
Expected<T> ReadConfigFile(const std::string& path, FromYaml&& from_yaml) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return from_yaml(*text, path, ConfigDirOf(path));
}

}  // namespace devplace

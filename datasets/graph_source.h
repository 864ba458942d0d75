// Which graph a suite, an experiment or a test means: a family member, a zoo model or a graph file. One value type
// and one way to build it, shared by compare/validate suites, learning experiments and the Python/CLI front ends.
#pragma once

#include <cstdint>
#include <string>

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

// Exactly one of `family` (with `seed` and optional `target_ops`), `zoo` (with optional `batch`) or `file`
// (a graph JSON path, already resolved by whoever read it) is set.
struct GraphSource {
  std::string family;
  uint64_t seed = 0;
  int32_t target_ops = 0;  // family only; 0: the size the seed draws
  std::string zoo;
  int64_t batch = 0;       // zoo only; 0: the model's default batch
  std::string file;

  // A short label for tables and logs: "nmt-s3" ("nmt-s3-n300" with a target), "gnmt2" ("gnmt2-b64" with a
  // batch), or the file's stem.
  std::string label() const;
  bool operator==(const GraphSource&) const = default;
};

// The training graph `source` refers to. Errors carry the generator's or reader's message (an unknown family or
// zoo name, a file that does not parse) and say which source it was when the message would not.
Expected<Graph> BuildGraph(const GraphSource& source);

}  // namespace devplace

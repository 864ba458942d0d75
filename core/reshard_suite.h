// A suite of cross-mesh resharding cases (configs/suites/reshard-*.yaml, docs/simulator.md "Collectives and
// resharding"): each case names a source and a destination mesh (a topology's declared mesh or SHAPE@FIRST), their
// specs in Alpa's notation (core/reshard.h) and a tensor shape. Meshes and specs are resolved against a topology by
// the caller (`devplace reshard --suite`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace devplace {

struct ReshardCase {
  std::string name;
  std::string src_mesh, src_spec, dst_mesh, dst_spec;
  std::vector<int64_t> shape;
  std::string note;  // optional free text shown with the results
};

struct ReshardSuite {
  std::string description;
  int64_t elem_bytes = 4;
  std::vector<ReshardCase> cases;
};

// Reads a suite from YAML text: `description` (optional), `elem_bytes` (optional, 1..64, default 4) and `cases`, a
// non-empty list of {name, src_mesh, src_spec, dst_mesh, dst_spec, shape: [extents >= 1], note (optional)} with
// unique names. Errors read "<source>: cases[i].<field>: <reason>".
Expected<ReshardSuite> ReshardSuiteFromYaml(const std::string& text, const std::string& source);
// ReshardSuiteFromYaml of the file at `path`.
Expected<ReshardSuite> ReadReshardSuiteFile(const std::string& path);

}  // namespace devplace

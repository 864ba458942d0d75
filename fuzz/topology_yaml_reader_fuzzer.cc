// libFuzzer target: TopologyFromYaml and the meshes a topology file declares (MeshesFromYaml) on arbitrary bytes;
// a topology it accepts must write back to YAML that reads back to the same YAML.
#include "core/mesh.h"
#include "core/topology_yaml.h"
#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  const std::string text = fuzz::Text(data, size);
  Expected<Topology> topology = TopologyFromYaml(text, "fuzz.yaml");
  if (!fuzz::Check(topology)) return 0;
  fuzz::Check(MeshesFromYaml(text, "fuzz.yaml", *topology));
  const std::string yaml = TopologyToYaml(*topology);
  Expected<Topology> back = TopologyFromYaml(yaml, "fuzz-back.yaml");
  if (!back.ok() || TopologyToYaml(*back) != yaml) __builtin_trap();
  return 0;
}

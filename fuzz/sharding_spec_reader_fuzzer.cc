// libFuzzer target: sharding spec files (`devplace shard --spec`) on arbitrary bytes: ShardingRequestFromYaml
// against the machine of fuzz_inputs.h and its declared meshes, then, for a spec it accepts, PropagateSharding
// over the graph (annotations that match no op or do not fit are errors, never crashes).
#include "core/sharding_io.h"
#include "fuzz/fuzz_inputs.h"
#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  const fuzz::FuzzInputs& in = fuzz::Inputs();
  Expected<ShardingRequest> request = ShardingRequestFromYaml(fuzz::Text(data, size), "spec.yaml", in.topology, in.meshes);
  if (!fuzz::Check(request)) return 0;
  fuzz::Check(PropagateSharding(in.graph, request->mesh, request->annotations));
  return 0;
}

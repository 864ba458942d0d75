// libFuzzer targets: the YAML configuration readers on arbitrary bytes, one target per reader (fuzz/CMakeLists.txt
// compiles this file with DEVPLACE_FUZZ_READER 0..3): experiment, compare suite, validate suite, resharding suite.
// Relative paths resolve against a folder that does not exist, so nothing is read from disk.
#include "config/compare_suite.h"
#include "config/experiment_config.h"
#include "config/validate_suite.h"
#include "core/reshard_suite.h"
#include "fuzz/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace devplace;
  const std::string text = fuzz::Text(data, size);
  const std::string dir = "/nonexistent-fuzz-dir";
  switch (DEVPLACE_FUZZ_READER) {
    case 0: fuzz::Check(ExperimentConfigFromYaml(text, "e.yaml", dir)); break;
    case 1: fuzz::Check(CompareSuiteFromYaml(text, "s.yaml", dir)); break;
    case 2: fuzz::Check(ValidateSuiteFromYaml(text, "v.yaml", dir)); break;
    default: fuzz::Check(ReshardSuiteFromYaml(text, "r.yaml")); break;
  }
  return 0;
}

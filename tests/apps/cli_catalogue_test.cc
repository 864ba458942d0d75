// The bad-input catalogue: every reader and command given malformed or hostile input must exit non-zero with
// exactly one line on stderr that names the file and the field (or the option), print nothing on stdout and
// leave no output behind. Each case runs the built program in a fresh directory holding only its input files.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/apps/cli_runner.h"

namespace devplace::testing {
namespace {

struct BadInput {
  std::string name;                                        // the test's name
  std::vector<std::string> args;                           // the command line after `devplace`
  std::vector<std::pair<std::string, std::string>> files;  // input files: name, contents
  int exit_code;                                           // 1: bad input, 2: bad command line
  std::string expect;                                      // what the one stderr line must contain
};

// gtest prints a failing case by its name.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

using Files = std::vector<std::pair<std::string, std::string>>;

const std::string G = kTinyGraph;
const std::string T = kPairTopology;
const std::string P = kTinyStrategy;

// The inputs of `simulate` with one of them replaced.
Files SimInputs(const std::string& graph, const std::string& topology, const std::string& strategy) {
  return {{"g.json", graph}, {"t.yaml", topology}, {"p.json", strategy}};
}
const std::vector<std::string> kSimulate = {"simulate", "-g", "g.json", "-t", "t.yaml", "-p", "p.json"};
// `devplace graph info g.json` on `graph`.
BadInput GraphCase(const std::string& name, const std::string& graph, const std::string& expect) {
  return {name, {"graph", "info", "g.json"}, {{"g.json", graph}}, 1, expect};
}
BadInput TopoCase(const std::string& name, const std::string& topology, const std::string& expect) {
  return {name, {"topo", "show", "t.yaml"}, {{"t.yaml", topology}}, 1, expect};
}
BadInput StrategyCase(const std::string& name, const std::string& strategy, const std::string& expect) {
  return {name, kSimulate, SimInputs(G, T, strategy), 1, expect};
}

const char* const kExperiment = R"(name: tiny
seed: 3
topologies: [TOPOLOGY]
train: [{family: ptb, seeds: {from: 1, count: 2}, target_ops: 120}]
policy: {hidden: 16, sage_layers: 1, transformer_layers: 1, heads: 2, feedforward: 16, segment: 8}
ppo: {iterations: 2, graphs_per_iteration: 2, samples_per_graph: 4, epochs: 2, minibatches: 2}
)";
std::string Experiment() {
  return Replace(kExperiment, "TOPOLOGY", std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml");
}
const char* const kCosts = R"({"format": "devplace.costs", "version": 1,
 "entries": [{"device_kind": "v100", "op_type": "matmul", "role": "forward", "dtype": "f32",
              "shape": [64, 256], "flops": 8388608, "seconds": 2e-5}]}
)";

std::vector<BadInput> GraphCases() {
  const std::string op1 = R"("flops": 8388608)";
  return {
      {"GraphMissingFile", {"graph", "info", "absent.json"}, {}, 1, "absent.json: cannot open: No such file"},
      {"GraphIsADirectory", {"graph", "info", "sub"}, {{"sub/keep", ""}}, 1, "sub: is a directory"},
      GraphCase("GraphEmptyFile", "", "g.json: invalid JSON"),
      GraphCase("GraphTruncated", G.substr(0, 60), "g.json: invalid JSON"),
      GraphCase("GraphNotAnObject", "[1, 2]", "g.json: expected an object"),
      GraphCase("GraphWrongFormat", Replace(G, "devplace.graph", "devplace.strategy"), "g.json: format"),
      GraphCase("GraphWrongVersion", Replace(G, R"("version": 1)", R"("version": 2)"), "g.json: version"),
      GraphCase("GraphUnknownRootField", Replace(G, R"("name": "tiny")", R"("name": "tiny", "colour": 1)"),
                "g.json: colour: unknown field"),
      GraphCase("GraphMissingOps", Replace(G, R"("ops")", R"("opz")"), "g.json: ops: missing required field"),
      GraphCase("GraphOpsNotAList", Replace(G, R"("edges": [[0, 1, 65536]])", R"("edges": {})"),
                "g.json: edges: expected a list"),
      GraphCase("GraphOpUnknownField", Replace(G, op1, R"("flopz": 1)"), "g.json: ops[1].flopz: unknown field"),
      GraphCase("GraphOpMissingName", Replace(G, R"("name": "x", )", ""), "g.json: ops[0].name: missing"),
      GraphCase("GraphOpMissingShape", Replace(G, R"(, "shape": [64, 256]})", "}"),
                "g.json: ops[0].shape: missing"),
      GraphCase("GraphShapeZero", Replace(G, "[64, 256]", "[64, 0]"), "g.json: ops[0].shape[1]: must be >= 1"),
      GraphCase("GraphShapeFraction", Replace(G, "[64, 256]", "[64, 2.5]"),
                "g.json: ops[0].shape[1]: expected an integer"),
      GraphCase("GraphShapeNotAList", Replace(G, "[64, 256]", "64"), "g.json: ops[0].shape: expected a list"),
      GraphCase("GraphNegativeFlops", Replace(G, op1, R"("flops": -1)"), "g.json: ops[1].flops: must be >= 0"),
      GraphCase("GraphFlopsOverflow", Replace(G, op1, R"("flops": 1e999)"),
                "g.json: ops[1].flops: number out of range: 1e999"),
      GraphCase("GraphFlopsString", Replace(G, op1, R"("flops": "lots")"), "g.json: ops[1].flops: expected a number"),
      GraphCase("GraphShapeOverflow", Replace(G, "[64, 256]", "[64, -1e400]"),
                "g.json: ops[0].shape[1]: number out of range"),
      GraphCase("GraphParamBytesTooLarge", Replace(G, "262144", "1e30"), "g.json: ops[1].param_bytes"),
      GraphCase("GraphNegativeParamBytes", Replace(G, "262144", "-5"), "g.json: ops[1].param_bytes: must be >= 0"),
      GraphCase("GraphUnknownRole", Replace(G, R"("type": "input")", R"("type": "input", "role": "sideways")"),
                "g.json: ops[0].role: unknown role 'sideways'"),
      GraphCase("GraphUnknownDtype", Replace(G, R"("type": "input")", R"("type": "input", "dtype": "f31")"),
                "g.json: ops[0].dtype: unknown dtype 'f31'"),
      GraphCase("GraphUnknownDimKind",
                Replace(G, op1, op1 + R"(, "dims": [{"kind": "diagonal", "size": 64}])"),
                "g.json: ops[1].dims[0].kind: unknown dimension kind"),
      GraphCase("GraphEdgeOutOfRange", Replace(G, "[0, 1, 65536]", "[0, 7, 65536]"),
                "g.json: edges[0][1]: must be <= 1"),
      GraphCase("GraphEdgeNotATriple", Replace(G, "[0, 1, 65536]", "[0, 1]"),
                "g.json: edges[0]: expected [src, dst, bytes]"),
      GraphCase("GraphEdgeNegativeBytes", Replace(G, "[0, 1, 65536]", "[0, 1, -8]"),
                "g.json: edges[0][2]: must be >= 0"),
      GraphCase("GraphCycle", Replace(G, "[0, 1, 65536]", "[0, 1, 8], [1, 0, 8]"), "g.json: op '"),
      GraphCase("GraphDuplicateOpName", Replace(G, R"("name": "fc")", R"("name": "x")"), "g.json: "),
  };
}

std::vector<BadInput> TopologyCases() {
  const std::string dev = "peak_tflops: 15.7";
  return {
      {"TopoMissingFile", {"topo", "show", "absent.yaml"}, {}, 1, "absent.yaml: cannot open"},
      TopoCase("TopoInvalidYaml", "name: x\ndevices: [{name: a\n", "t.yaml: line 3: invalid YAML"),
      TopoCase("TopoNotAMapping", "- a\n- b\n", "t.yaml: expected an object"),
      TopoCase("TopoEmptyFile", "", "t.yaml: expected an object"),
      TopoCase("TopoUnknownRootField", T + "colour: red\n", "t.yaml: colour: unknown field"),
      TopoCase("TopoMissingDevices", Replace(T, "devices:", "devicez:"), "t.yaml: devices: missing required field"),
      TopoCase("TopoDeviceUnknownField", Replace(T, dev, dev + ", colour: red"), "t.yaml: devices[0].colour"),
      TopoCase("TopoNegativePeak", Replace(T, dev, "peak_tflops: -1"), "t.yaml: devices[0].peak_tflops: must be >="),
      TopoCase("TopoPeakOverflow", Replace(T, dev, "peak_tflops: 1e999"), "t.yaml: devices[0].peak_tflops"),
      TopoCase("TopoMemoryString", Replace(T, "memory_gib: 16", "memory_gib: lots"), "t.yaml: devices[0].memory_gib"),
      TopoCase("TopoCountZero", Replace(T, "count: 2", "count: 0"), "t.yaml: devices[0].count"),
      TopoCase("TopoLinkUnknownDevice", Replace(T, "to: gpu1", "to: gpu7"), "t.yaml: links[0].to: unknown device"),
      TopoCase("TopoLinkNegativeBandwidth", Replace(T, "bandwidth_gbs: 25", "bandwidth_gbs: -25"),
               "t.yaml: links[0].bandwidth_gbs"),
      TopoCase("TopoLinkUnknownField", Replace(T, "kind: nvlink}", "kind: nvlink, colour: red}"),
               "t.yaml: links[0].colour: unknown field"),
      TopoCase("TopoUnreachable", T.substr(0, T.find("links:")), "t.yaml: device 'gpu1' is unreachable"),
      TopoCase("TopoDevicesNotAList", Replace(T, "devices:\n", "devices: 3\nx:\n"), "t.yaml: "),
  };
}

std::vector<BadInput> StrategyCases() {
  const std::string x = R"({"op": "x", "devices": ["gpu0"]})";
  return {
      {"StrategyMissingFile", kSimulate, {{"g.json", G}, {"t.yaml", T}}, 1, "p.json: cannot open"},
      StrategyCase("StrategyInvalidJson", "{\"format\": ", "p.json: invalid JSON"),
      StrategyCase("StrategyWrongFormat", Replace(P, "devplace.strategy", "devplace.graph"), "p.json: format"),
      StrategyCase("StrategyForAnotherGraph", Replace(P, R"("graph": "tiny")", R"("graph": "bert")"),
                   "p.json: graph: the strategy is for graph 'bert', not 'tiny'"),
      StrategyCase("StrategyUnknownOp", Replace(P, R"("op": "x")", R"("op": "y")"), "p.json: ops[0].op: no op named 'y'"),
      StrategyCase("StrategyOpTwice", Replace(P, R"("op": "fc")", R"("op": "x")"), "p.json: ops[1].op: op 'x' appears twice"),
      StrategyCase("StrategyWrongOpCount", Replace(P, x + ", ", ""), "p.json: ops: has 1 entries"),
      StrategyCase("StrategyUnknownDevice", Replace(P, R"(["gpu1"])", R"(["tpu9"])"),
                   "p.json: ops[1].devices[0]: unknown device 'tpu9'"),
      StrategyCase("StrategyDevicesNotAList", Replace(P, R"(["gpu1"])", R"("gpu1")"),
                   "p.json: ops[1].devices: expected a list"),
      StrategyCase("StrategyDeviceNotAString", Replace(P, R"(["gpu1"])", "[1]"),
                   "p.json: ops[1].devices[0]: expected a string"),
      StrategyCase("StrategyNoDevices", Replace(P, R"(["gpu1"])", "[]"), "p.json: op 'fc'"),
      StrategyCase("StrategyDegreeOverflow", Replace(P, R"(["gpu1"]})", R"(["gpu1"], "degrees": [1e999]})"),
                   "p.json: ops[1].degrees[0]: number out of range: 1e999"),
      StrategyCase("StrategyDegreeZero", Replace(P, R"(["gpu1"]})", R"(["gpu1"], "degrees": [0]})"),
                   "p.json: ops[1].degrees[0]: must be >= 1"),
      StrategyCase("StrategyDegreesWithoutDims", Replace(P, R"(["gpu1"]})", R"(["gpu1"], "degrees": [2]})"),
                   "p.json: op 'fc'"),
      StrategyCase("StrategyUnknownField", Replace(P, x, R"({"op": "x", "devices": ["gpu0"], "colour": 1})"),
                   "p.json: ops[0].colour: unknown field"),
      StrategyCase("StrategyOpsNotAList", Replace(P, R"("ops": [)", R"("ops": 1, "x": [)"), "p.json: ops: expected a list"),
  };
}

std::vector<BadInput> CommandCases() {
  const std::string costs = kCosts;
  const Files sim = SimInputs(G, T, P);
  auto plus = [](Files files, const std::string& name, const std::string& text) {
    files.emplace_back(name, text);
    return files;
  };
  const std::string policy_state = ReadText(DEVPLACE_SOURCE_DIR "/models/general/state.json");
  const std::string policy_model = ReadText(DEVPLACE_SOURCE_DIR "/models/general/model-3000.pt");
  std::string flipped_model = policy_model;
  flipped_model[flipped_model.size() / 2] ^= 0x10;
  auto policy = [&](const std::string& state, const std::string& model) {
    return plus(plus(sim, "pol/state.json", state), "pol/model-3000.pt", model);
  };
  const std::vector<std::string> place_pol = {"place", "--policy", "pol", "-g", "g.json", "-t", "t.yaml", "-o",
                                              "out.json"};
  auto args = [](std::vector<std::string> base, const std::vector<std::string>& more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  const std::vector<std::string> search = {"search", "-g", "g.json", "-t", "t.yaml", "-o", "out.json"};
  const std::string experiment = Experiment();
  return {
      // The command line itself.
      {"NoCommand", {}, {}, 2, "A subcommand is required"},
      {"UnknownCommand", {"frobnicate"}, {}, 2, "unknown command 'frobnicate' (commands: graph, topo"},
      {"UnknownOption", args(kSimulate, {"--colour"}), sim, 2, "--colour"},
      {"SimulateWithoutPlacement", {"simulate", "-g", "g.json", "-t", "t.yaml"}, sim, 2, "--placement is required"},
      // simulate
      {"SimulateGraphOverflow", kSimulate, SimInputs(Replace(G, "8388608", "1e999"), T, P), 1,
       "g.json: ops[1].flops: number out of range"},
      {"SimulateBadTopology", kSimulate, SimInputs(G, Replace(T, "to: gpu1", "to: gpu7"), P), 1,
       "t.yaml: links[0].to"},
      {"SimulateCostsMissing", args(kSimulate, {"--costs", "c.json"}), sim, 1, "c.json: cannot open"},
      {"SimulateCostsWrongFormat", args(kSimulate, {"--costs", "c.json"}),
       plus(sim, "c.json", Replace(costs, "devplace.costs", "devplace.graph")), 1, "c.json: format"},
      {"SimulateCostsNegativeSeconds", args(kSimulate, {"--costs", "c.json"}),
       plus(sim, "c.json", Replace(costs, "2e-5", "-2e-5")), 1, "c.json: entries[0].seconds"},
      {"SimulateCostsUnknownField", args(kSimulate, {"--costs", "c.json"}),
       plus(sim, "c.json", Replace(costs, R"("seconds")", R"("colour": 1, "seconds")")), 1,
       "c.json: entries[0].colour: unknown field"},
      {"SimulateCostsOverflow", args(kSimulate, {"--costs", "c.json"}),
       plus(sim, "c.json", Replace(costs, "2e-5", "2e999")), 1, "c.json: entries[0].seconds: number out of range"},
      {"SimulateTraceIntoMissingDir", args(kSimulate, {"--trace", "nodir/trace.json"}), sim, 1,
       "nodir/trace.json: cannot write: No such file or directory"},
      {"SimulateTraceIsADirectory", args(kSimulate, {"--trace", "sub"}), plus(sim, "sub/keep", ""), 1,
       "sub: is a directory"},
      // search
      {"SearchUnknownAlgorithm", args(search, {"--algo", "telepathy"}), sim, 1, "telepathy"},
      {"SearchNegativeBudget", args(search, {"--algo", "random", "--budget-evals", "-5"}), sim, 2, "--budget-evals"},
      {"SearchInitForAnotherGraph", args(search, {"--algo", "mcmc", "--init", "p.json"}),
       SimInputs(G, T, Replace(P, R"("graph": "tiny")", R"("graph": "bert")")), 1, "p.json: graph"},
      {"SearchOutputIntoMissingDir", {"search", "--algo", "single", "-g", "g.json", "-t", "t.yaml", "-o", "no/p.json"},
       sim, 1, "no/p.json: cannot write: No such file or directory"},
      {"SearchOutputIsADirectory", {"search", "--algo", "single", "-g", "g.json", "-t", "t.yaml", "-o", "sub"},
       plus(sim, "sub/keep", ""), 1, "sub: is a directory"},
      {"SearchBadGraph", args(search, {"--algo", "single"}), SimInputs(Replace(G, "[64, 256]", "[64, 0]"), T, P), 1,
       "g.json: ops[0].shape[1]"},
      // graph gen / model / import
      {"GenUnknownFamily", {"graph", "gen", "--family", "resnet", "-o", "out.json"}, {}, 1, "resnet"},
      {"GenNegativeTargetOps", {"graph", "gen", "--family", "ptb", "--target-ops", "-3", "-o", "out.json"}, {}, 2,
       "--target-ops: Value -3 not in range 0.000000 to 1.79769e+308"},
      {"GenOutputIntoMissingDir", {"graph", "gen", "--family", "ptb", "-o", "no/g.json"}, {}, 1,
       "no/g.json: cannot write"},
      {"ModelUnknownName", {"graph", "model", "alexnet9", "-o", "out.json"}, {}, 1, "alexnet9"},
      {"ModelZeroBatch", {"graph", "model", "gnmt2", "--batch", "0", "-o", "out.json"}, {}, 2, "--batch"},
      {"ImportMissingFile", {"graph", "import", "absent.onnx", "-o", "out.json"}, {}, 1, "absent.onnx"},
      {"ImportGarbageOnnx", {"graph", "import", "m.onnx", "-o", "out.json"}, {{"m.onnx", "not a protobuf \x01\x02"}},
       1, "m.onnx"},
      {"ImportUnknownExtension", {"graph", "import", "m.txt", "-o", "out.json"}, {{"m.txt", "hello"}}, 1, "m.txt"},
      {"ImportChakraInvalidJson", {"graph", "import", "trace.json", "--device-kind", "v100", "-o", "out.json"},
       {{"trace.json", "{\"nodes\": ["}}, 1, "trace.json"},
      {"ImportChakraNoNodes", {"graph", "import", "trace.json", "-o", "out.json"},
       {{"trace.json", "{\"nodes\": []}"}}, 1, "trace.json: the trace has no nodes"},
      {"ImportBadDim", {"graph", "import", "m.onnx", "--dim", "seq", "-o", "out.json"}, {{"m.onnx", "x"}}, 1,
       "--dim seq: expected NAME=N"},
      // compare / validate suites
      {"CompareMissingSuite", {"compare", "--suite", "s.yaml", "-o", "out"}, {}, 1, "s.yaml: cannot open"},
      {"CompareSuiteInvalidYaml", {"compare", "--suite", "s.yaml", "-o", "out"}, {{"s.yaml", "name: [x\n"}}, 1,
       "s.yaml: line"},
      {"CompareSuiteUnknownField", {"compare", "--suite", "s.yaml", "-o", "out"},
       {{"s.yaml", "name: s\ncolour: red\nmodels: [{zoo: gnmt2}]\ntopologies: [t.yaml]\nalgorithms: [single]\n"},
        {"t.yaml", T}},
       1, "s.yaml: colour: unknown field"},
      {"CompareSuiteBadTopology", {"compare", "--suite", "s.yaml", "-o", "out"},
       {{"s.yaml", "name: s\nmodels: [{zoo: gnmt2}]\ntopologies: [t.yaml]\nalgorithms: [single]\n"},
        {"t.yaml", Replace(T, "to: gpu1", "to: gpu7")}},
       1, "t.yaml: links[0].to"},
      {"ValidateMissingSuite", {"validate", "--suite", "v.yaml", "-o", "out"}, {}, 1, "v.yaml: cannot open"},
      {"ValidateSuiteMissingTopology", {"validate", "--suite", "v.yaml", "-o", "out"},
       {{"v.yaml", "name: v\ncolour: red\n"}}, 1, "v.yaml: topology: missing required field"},
      // train
      {"TrainMissingConfig", {"train", "--config", "e.yaml", "-o", "run"}, {}, 1, "e.yaml: cannot open"},
      {"TrainConfigInvalidYaml", {"train", "--config", "e.yaml", "-o", "run"}, {{"e.yaml", "name: [\n"}}, 1,
       "e.yaml: line"},
      {"TrainConfigUnknownField", {"train", "--config", "e.yaml", "-o", "run"},
       {{"e.yaml", experiment + "colour: red\n"}}, 1, "e.yaml: colour: unknown field"},
      {"TrainConfigBadPolicyField", {"train", "--config", "e.yaml", "-o", "run"},
       {{"e.yaml", Replace(experiment, "hidden: 16", "hidden: -16")}}, 1, "e.yaml: policy.hidden"},
      {"TrainResumeWithoutRun", {"train", "--resume", "-o", "run"}, {}, 1, "run/ckpt/state.json: cannot open"},
      {"TrainWithoutConfig", {"train", "-o", "run"}, {}, 1, "--config is required"},
      // place
      {"PlaceMissingPolicy", {"place", "--policy", "nopolicy", "-g", "g.json", "-t", "t.yaml", "-o", "out.json"}, sim,
       1, "nopolicy/state.json: cannot open"},
      {"PlaceCorruptPolicyState", {"place", "--policy", "pol", "-g", "g.json", "-t", "t.yaml", "-o", "out.json"},
       plus(sim, "pol/state.json", "{\"iteration\": "), 1, "pol/state.json: invalid JSON"},
      // A checkpoint is verified (format, version, size, SHA-256) before LibTorch parses it: the shipped policy
      // with its model file truncated, one bit flipped, a newer version, and a sidecar from before digests.
      {"PlaceTruncatedPolicy", place_pol, policy(policy_state, policy_model.substr(0, 4096)), 1,
       "pol/model-3000.pt: truncated: 4096 bytes, its state.json records 539020"},
      {"PlaceCorruptedPolicy", place_pol, policy(policy_state, flipped_model), 1,
       "pol/model-3000.pt: corrupted: its SHA-256 differs from the one its state.json records"},
      {"PlacePolicyNewerVersion", place_pol,
       policy(Replace(policy_state, "\"version\": 1", "\"version\": 2"), policy_model), 1,
       "pol/state.json: version: 2 is not a checkpoint version this devplace reads (1)"},
      {"PlacePolicyWithoutDigest", place_pol,
       policy(Replace(policy_state, " \"format\": \"devplace.checkpoint\",\n", ""), policy_model), 1,
       "pol/state.json: format: missing required field"},
      // An ensemble folder: its file is read as checked JSON, and each member as a checkpoint (named by index).
      {"PlaceEnsembleOfOne", place_pol,
       plus(sim, "pol/ensemble.json", R"({"format": "devplace.ensemble", "version": 1, "members": ["a"]})"), 1,
       "pol/ensemble.json: members: an ensemble needs at least two members"},
      {"PlaceEnsembleMissingMember", place_pol,
       plus(policy(policy_state, policy_model), "pol/ensemble.json",
            R"({"format": "devplace.ensemble", "version": 1, "members": ["../pol", "b"]})"),
       1, "pol/ensemble.json: members[1]: pol/b/state.json: cannot open"},
      {"PlaceEnsembleMemberTruncated", place_pol,
       plus(plus(plus(sim, "pol/ensemble.json",
                      R"({"format": "devplace.ensemble", "version": 1, "members": ["m", "m"]})"),
                 "pol/m/state.json", policy_state),
            "pol/m/model-3000.pt", policy_model.substr(0, 4096)),
       1, "pol/ensemble.json: members[0]: pol/m/model-3000.pt: truncated"},
      {"PlaceBadGraph", {"place", "-g", "g.json", "-t", "t.yaml", "-o", "out.json"},
       SimInputs(Replace(G, R"("version": 1)", R"("version": "one")"), T, P), 1, "g.json: version"},
      // profile / run / calibrate (these fail on their inputs before touching LibTorch)
      {"ProfileBadGraph", {"profile", "-g", "g.json", "-o", "out.json"},
       {{"g.json", Replace(G, "8388608", "1e999")}}, 1, "g.json: ops[1].flops"},
      {"ProfileBadBackend", {"profile", "-g", "g.json", "--backend", "abacus", "-o", "out.json"}, {{"g.json", G}}, 1,
       "abacus"},
      {"RunBadStrategy", {"run", "-g", "g.json", "-t", "t.yaml", "-p", "p.json"},
       SimInputs(G, T, Replace(P, R"("op": "x")", R"("op": "y")")), 1, "p.json: ops[0].op"},
      {"CalibrateBadTopology", {"calibrate", "-t", "t.yaml", "-o", "out.yaml"},
       {{"t.yaml", Replace(T, "memory_gib: 16", "memory_gib: -16")}}, 1, "t.yaml: devices[0].memory_gib"},
      // cost-error: the cost table is read and checked against the graph before anything is compared
      {"CostErrorMissingTable", {"cost-error", "-g", "g.json", "-t", "t.yaml", "--costs", "c.json"},
       SimInputs(G, T, P), 1, "c.json: cannot open"},
      {"CostErrorTableOfAnotherMachine", {"cost-error", "-g", "g.json", "-t", "t.yaml", "--costs", "c.json"},
       plus(SimInputs(G, T, P), "c.json",
            R"({"format": "devplace.costs", "version": 1, "entries": [{"device_kind": "tpu", "op_type": "matmul",
               "role": "forward", "dtype": "f32", "shape": [4], "flops": 1.0, "seconds": 1e-3}]})"),
       1, "measures none of its ops"},
  };
}

// A forward graph whose ops can be sharded: x [6, 256] (batch, features) -> fc (matmul).
const std::string kShardGraph = R"({"format": "devplace.graph", "version": 1, "name": "sg",
 "ops": [{"name": "x", "type": "input", "shape": [6, 256],
          "dims": [{"kind": "sample", "output_axis": 0, "input_axis": 0, "size": 6},
                   {"kind": "attribute", "output_axis": 1, "input_axis": 1, "size": 256}]},
         {"name": "fc", "type": "matmul", "shape": [6, 256], "param_bytes": 262144, "flops": 786432,
          "dims": [{"kind": "sample", "output_axis": 0, "input_axis": 0, "size": 6},
                   {"kind": "parameter", "output_axis": 1, "input_axis": -1, "size": 256},
                   {"kind": "reduction", "output_axis": -1, "input_axis": 1, "size": 256}]}],
 "edges": [[0, 1, 6144]]})";

// `devplace shard` on the graph above and the pair topology with sharding spec `spec`: bad specs (issue 17).
std::vector<BadInput> ShardCases() {
  const std::vector<std::string> shard = {"shard", "-g", "g.json", "-t", "t.yaml", "--spec", "s.yaml", "-o",
                                          "out.json"};
  const std::string mesh = "mesh: {shape: [2], axes: [data]}\n";
  auto files = [&](const std::string& spec, const std::string& graph = kShardGraph) {
    return Files{{"g.json", graph}, {"t.yaml", T}, {"s.yaml", spec}};
  };
  return {
      {"ShardUnknownMeshAxis", shard, files(mesh + "annotations:\n  - {ops: x, spec: [modle]}\n"), 1,
       "s.yaml: annotations[0].spec[0]: unknown mesh axis 'modle'"},
      {"ShardAxisUsedTwice", shard,
       files("mesh: {shape: [1, 2], axes: [data, model]}\nannotations:\n  - {ops: x, spec: [model, model]}\n"), 1,
       "s.yaml: annotations[0].spec[1]: mesh axis 'model' is used twice in one spec"},
      {"ShardDimensionNotDivisible", shard,
       files(mesh + "annotations:\n  - {ops: x, spec: [data]}\n",
             Replace(Replace(kShardGraph, "[6, 256]", "[5, 256]"), R"("size": 6})", R"("size": 5})")),
       1, "s.yaml: annotations[0]: op 'x': axis 0 (extent 5) is not divisible by 2 shards"},
      {"ShardConflictingAnnotations", shard,
       files(mesh + "annotations:\n  - {ops: x, spec: [data]}\n  - {ops: \"?\", spec: [null, data]}\n"), 1,
       "s.yaml: annotations[1]: conflicts with s.yaml: annotations[0] on op 'x'"},
      {"ShardPatternMatchesNothing", shard, files(mesh + "annotations:\n  - {ops: ffn, spec: [data]}\n"), 1,
       "s.yaml: annotations[0]: pattern 'ffn' matches no forward op"},
      {"ShardUnknownZeroAxis", shard, files(mesh + "annotations:\n  - {ops: x, spec: [data]}\nzero: dta\n"), 1,
       "s.yaml: zero: unknown mesh axis 'dta'"},
      {"SearchMeshWithoutAutoShard",
       {"search", "--algo", "single", "--mesh", "2", "-g", "g.json", "-t", "t.yaml", "-o", "out.json"}, files(""), 1,
       "--mesh: only --algo auto-shard takes a mesh (got --algo single)"},
      {"SearchAutoShardMeshTooLarge",
       {"search", "--algo", "auto-shard", "--mesh", "3x3", "-g", "g.json", "-t", "t.yaml", "-o", "out.json"},
       files(""), 1, "auto-shard: mesh '3x3': needs 9 devices but topology 'pair' has 2"},
  };
}

std::vector<BadInput> AllCases() {
  std::vector<BadInput> all;
  for (auto part : {GraphCases(), TopologyCases(), StrategyCases(), CommandCases(), ShardCases()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

class BadInputCatalogue : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputCatalogue, OneLineNamingTheFieldAndNothingLeftBehind) {
  const BadInput& c = GetParam();
  const std::string dir = FreshDir("catalogue-" + c.name);
  for (const auto& [name, text] : c.files) WriteText(dir, name, text);
  const std::vector<std::string> before = ListTree(dir);
  const CliRun run = RunDevplace(c.args, dir);
  EXPECT_EQ(run.exit_code, c.exit_code) << run.err;
  ASSERT_FALSE(run.err.empty());
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "not exactly one line:\n" << run.err;
  EXPECT_EQ(run.err.rfind("devplace: ", 0), 0u) << run.err;
  EXPECT_NE(run.err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(ListTree(dir), before) << "output left behind";
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputCatalogue, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

// The catalogue is as large as promised (docs/reliability.md).
TEST(BadInputCatalogueSize, HasAtLeastEightyCases) { EXPECT_GE(AllCases().size(), 80u); }

}  // namespace
}  // namespace devplace::testing

// The Chakra importer: the hand-written trace in tests/datasets/import_chakra_trace.json (proto field names),
// chakra_jsonizer's stream of camelCase objects with 64-bit integers as strings, and one-line errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include "core/atomic_file.h"
#include "datasets/import/importers.h"

namespace devplace {
namespace {

const std::string kTrace = std::string(DEVPLACE_SOURCE_DIR) + "/tests/datasets/import_chakra_trace.json";

Expected<ImportResult> Import(const std::string& text) { return ImportChakraTrace(text, "t.json", "t"); }

void ExpectOneLineError(const Expected<ImportResult>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.error().message;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("t.json: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
}

TEST(ImportChakra, HandWrittenTrace) {
  Expected<ImportResult> r = ImportModelFile(kTrace);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->format, "chakra");
  EXPECT_TRUE(r->warnings.empty());
  const Graph& g = r->graph;
  EXPECT_EQ(g.name(), "import_chakra_trace");
  ASSERT_EQ(g.num_ops(), 10);
  ASSERT_EQ(r->measured_seconds.size(), 10u);
  // Compute nodes: type from the operator name, FLOPs from num_ops, shape and dtype from the outputs.
  const OpId fc1 = g.find("aten::linear#1");
  ASSERT_GE(fc1, 0);
  EXPECT_EQ(g.op(fc1).type, "linear");
  EXPECT_EQ(g.op(fc1).role, OpRole::kForward);
  EXPECT_EQ(g.op(fc1).shape, (std::vector<int64_t>{32, 4096}));
  EXPECT_EQ(g.op(fc1).flops, 268566528.0);
  EXPECT_DOUBLE_EQ(r->measured_seconds[fc1], 120e-6);
  EXPECT_EQ(g.op(g.find("aten::relu")).type, "relu");
  EXPECT_TRUE(g.op(g.find("aten::cross_entropy_loss")).shape.empty());
  const OpId bwd = g.find("autograd::engine::evaluate_function: AddmmBackward0#7");
  ASSERT_GE(bwd, 0);
  EXPECT_EQ(g.op(bwd).role, OpRole::kBackward);
  EXPECT_EQ(g.op(bwd).type, "addmmbackward0");
  EXPECT_EQ(g.op(g.find("Optimizer.step#SGD.step")).role, OpRole::kUpdate);
  // Communication nodes stay communication: the collective, its size as the output, its recorded time.
  const OpId ar = g.find("nccl:all_reduce#9");
  ASSERT_GE(ar, 0);
  EXPECT_EQ(g.op(ar).type, "all_reduce");
  EXPECT_EQ(g.op(ar).dtype, DType::kI8);
  EXPECT_EQ(OutputBytes(g.op(ar)), 16793600);
  EXPECT_EQ(g.op(ar).flops, 0.0);
  EXPECT_DOUBLE_EQ(r->measured_seconds[ar], 1250e-6);
  // Edges: data deps carry the producer's output, control deps only order.
  EXPECT_EQ(g.num_edges(), 11);
  for (const Edge& e : g.edges()) {
    if (g.op(e.dst).name == "Optimizer.step#SGD.step")
      EXPECT_EQ(e.bytes, 0);
    else
      EXPECT_EQ(e.bytes, OutputBytes(g.op(e.src)));
  }
  EXPECT_EQ(g.topological_order().back(), g.find("Optimizer.step#SGD.step"));
}

TEST(ImportChakra, JsonizerStreamWithCamelCaseAndStringIds) {
  const std::string text = R"({"version": "0.0.4", "attr": []}
{"id": "7", "name": "aten::mm", "type": "COMP_NODE", "durationMicros": "50",
 "attr": [{"name": "num_ops", "int64Val": "1000"}]}
{"id": "9", "name": "send", "type": 5, "dataDeps": ["7"], "durationMicros": "12",
 "attr": [{"name": "comm_size", "int64Val": "4096"}]}
{"id": "10", "name": "ag", "type": "COMM_COLL_NODE", "ctrlDeps": ["9"], "durationMicros": "3",
 "attr": [{"name": "comm_type", "int64Val": "2"}, {"name": "comm_size", "uint64Val": "64"}]}
)";
  Expected<ImportResult> r = Import(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.op(0).type, "mm");
  EXPECT_EQ(g.op(0).flops, 1000.0);
  EXPECT_EQ(g.op(1).type, "send");
  EXPECT_EQ(OutputBytes(g.op(1)), 4096);
  EXPECT_EQ(g.op(2).type, "all_gather");
  EXPECT_DOUBLE_EQ(r->measured_seconds[1], 12e-6);
  ASSERT_EQ(g.num_edges(), 2);
  EXPECT_EQ(g.edge(0).bytes, 4);  // mm has no recorded output: a scalar
}

TEST(ImportChakra, MissingDurationWarns) {
  Expected<ImportResult> r = Import(R"([{"id": 1, "name": "a", "type": "COMP_NODE"}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->measured_seconds[0], 0.0);
}

TEST(ImportChakra, MalformedTracesAreOneLineErrors) {
  const std::string trace = ReadFile(kTrace).value();
  ExpectOneLineError(Import(trace.substr(0, trace.size() / 2)), "invalid JSON");
  ExpectOneLineError(Import("{}"), "no nodes");
  ExpectOneLineError(Import(R"({"nodes": 3})"), "expected an array");
  ExpectOneLineError(Import(std::string(1000, '[') + std::string(1000, ']')), "nested deeper");
  ExpectOneLineError(Import(R"([{"id": 1, "type": "COMP_NODE"}, {"id": 1, "type": "COMP_NODE"}])"), "duplicate node id");
  ExpectOneLineError(Import(R"([{"id": 1, "type": "GPU_NODE"}])"), "unknown node type");
  ExpectOneLineError(Import(R"([{"id": -4, "type": "COMP_NODE"}])"), "non-negative integer id");
  ExpectOneLineError(Import(R"([{"id": 1, "type": "COMP_NODE", "attr": [{"name": "num_ops", "int64_val": -1}]}])"),
                     "num_ops");
}

// Proto3 JSON leaves out defaults: id 0, type 0 (INVALID_NODE), empty lists and zero sizes are absent.
TEST(ImportChakra, Proto3DefaultsMayBeAbsent) {
  Expected<ImportResult> r = Import(R"({"version": "0.0.4"}
{"name": "first", "type": "COMP_NODE", "durationMicros": "5"}
{"id": "1", "name": "second", "type": "COMP_NODE", "dataDeps": ["0"], "durationMicros": "7"}
{"id": "2", "name": "odd", "ctrlDeps": ["1"], "durationMicros": "1"}
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.op(2).type, "invalid");
  ASSERT_EQ(g.num_edges(), 2);
  EXPECT_EQ(g.edge(0).src, 0);
  EXPECT_EQ(g.edge(0).dst, 1);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("1 nodes have no type"), std::string::npos) << r->warnings[0];
}

// Dependencies on unknown ids, on the node itself and those closing a cycle are dropped, with one warning.
TEST(ImportChakra, DependenciesThatCannotBeHonouredAreDropped) {
  Expected<ImportResult> r = Import(R"([
    {"id": 1, "name": "a", "type": "COMP_NODE", "duration_micros": 1, "ctrl_deps": [1, 99], "data_deps": [3]},
    {"id": 2, "name": "b", "type": "COMP_NODE", "duration_micros": 1, "data_deps": [1]},
    {"id": 3, "name": "c", "type": "COMP_NODE", "duration_micros": 1, "data_deps": [2], "ctrl_deps": [77]}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(g.num_edges(), 2);  // of the cycle a <- c <- b <- a, one edge is dropped
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("2 on ids not in the trace, 1 of a node on itself, 1 closing a cycle"),
            std::string::npos)
      << r->warnings[0];
}

// A collective without comm_type is typed from its name, its size read from its tensor inputs; an unknown one
// is named in a warning.
TEST(ImportChakra, CollectivesWithoutCommTypeOrSize) {
  Expected<ImportResult> r = Import(R"([
    {"id": 1, "name": "c10d::allgather_", "type": "COMM_COLL_NODE", "duration_micros": 3,
     "inputs": {"values": "", "shapes": "[[1024, 4], []]", "types": "['Tensor(c10::Half)', 'Int']" }},
    {"id": 2, "name": "mystery", "type": "COMM_COLL_NODE", "duration_micros": 3,
     "attr": [{"name": "comm_type", "int64_val": 42}, {"name": "comm_size", "int64_val": 64}]}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->graph.op(0).type, "all_gather");
  EXPECT_EQ(OutputBytes(r->graph.op(0)), 1024 * 4 * 2);
  EXPECT_EQ(r->graph.op(1).type, "collective");
  EXPECT_EQ(OutputBytes(r->graph.op(1)), 64);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("nodes[1] ('mystery'): unknown collective"), std::string::npos) << r->warnings[0];
}

// chakra's JSON feeder layout (the file of its feeder tests): dangling dependencies dropped, collectives typed
// from their names.
TEST(ImportChakra, WorkloadGraphLayout) {
  Expected<ImportResult> r = ImportModelFile(std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/chakra/small_chakra.0.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.num_ops(), 7);
  EXPECT_EQ(g.op(g.find("c10d::broadcast_(0)")).type, "broadcast");
  EXPECT_EQ(g.op(g.find("aten::flatten_dense_tensors(0)#216")).type, "flatten_dense_tensors_0");
  EXPECT_DOUBLE_EQ(r->measured_seconds[0], 318e-6);
  EXPECT_EQ(g.num_edges(), 6);
}

// Binary .et traces (astra-sim's examples): length-delimited GlobalMetadata then Nodes.
TEST(ImportChakra, BinaryEt) {
  const std::string dir = std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/chakra/";
  Expected<ImportResult> r = ImportModelFile(dir + "astra_all_reduce_4npus_1MB.0.et");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->graph.num_ops(), 1);
  EXPECT_EQ(r->graph.op(0).type, "all_reduce");
  EXPECT_EQ(OutputBytes(r->graph.op(0)), 1048576);
  Expected<ImportResult> ring = ImportModelFile(dir + "astra_custom_allreduce_8npus_1MB.0.et");
  ASSERT_TRUE(ring.ok()) << ring.error().message;
  EXPECT_EQ(ring->graph.num_ops(), 35);
  // Truncated and foreign bytes are one-line errors naming the record.
  const std::string bytes = ReadFile(dir + "astra_custom_allreduce_8npus_1MB.0.et").value();
  Expected<ImportResult> cut = ImportChakraBinaryTrace(bytes.substr(0, bytes.size() / 2), "t.et", "t");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("t.et: record "), std::string::npos) << cut.error().message;
  EXPECT_FALSE(ImportChakraBinaryTrace("\x05\xff\xff\xff\xff\xff", "t.et", "t").ok());
}

// A gzipped .et is inflated first and gives the same graph as the plain file.
TEST(ImportChakra, GzippedBinaryEt) {
  Expected<ImportResult> r = ImportModelFile(std::string(DEVPLACE_SOURCE_DIR) + "/tests/data/real/chakra/feeder_chakra.0.et.gz");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->graph.num_ops(), 3664);
  EXPECT_EQ(r->graph.name(), "feeder_chakra.0");
}

// A decompression bomb (1 MiB of gzip that inflates to 1.07 GiB of zeros, past the 1 GiB limit on input files) is
// refused with one line, from the size its trailer declares, before anything is inflated.
TEST(ImportChakra, AGzipBombIsRefusedWithOneLine) {
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  const std::string zeros(1 << 20, '\0');
  std::string bomb;
  std::vector<unsigned char> buffer(1 << 16);
  for (int i = 0; i < 1100; ++i) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = static_cast<uInt>(zeros.size());
    const int flush = i == 1099 ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = buffer.data();
      z.avail_out = static_cast<uInt>(buffer.size());
      deflate(&z, flush);
      bomb.append(reinterpret_cast<const char*>(buffer.data()), buffer.size() - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  ASSERT_LT(bomb.size(), 2u << 20);
  const std::string path = ::testing::TempDir() + "bomb" + std::to_string(::getpid()) + ".json.gz";
  std::ofstream(path, std::ios::binary) << bomb;
  Expected<ImportResult> r = ImportModelFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, path + ": gzip: inflates to more than the 1.00 GiB limit on input files");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace devplace

// JSON/YAML round trips and the readers' error messages (file: field: reason).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <csignal>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/atomic_file.h"
#include "core/graph_json.h"
#include "core/sha256.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"
#include "core/training_graph.h"

namespace devplace {
namespace {

Graph SmallTrainingGraph() {
  GraphBuilder b("small");
  Op x{.name = "x", .type = "input", .layer = "in", .shape = {16, 32}};
  Op fc{.name = "fc", .type = "matmul", .layer = "fc", .shape = {16, 8}, .dtype = DType::kBF16,
        .param_bytes = 32 * 8 * 2, .flops = 2.0 * 16 * 32 * 8 + 0.1};
  fc.dims = {PartitionDim{DimKind::kSample, 0, 0, 16}, PartitionDim{DimKind::kReduction, -1, 1, 32}};
  b.add_edge(b.add_op(x), b.add_op(fc));
  return DeriveTrainingGraph(std::move(b).Build().value()).value();
}

void ExpectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_edges(), b.num_edges());
  EXPECT_EQ(a.name(), b.name());
  for (OpId i = 0; i < a.num_ops(); ++i) {
    const Op &x = a.op(i), &y = b.op(i);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.param_bytes, y.param_bytes);
    EXPECT_EQ(x.flops, y.flops);  // bit-exact
    EXPECT_EQ(x.colocation, y.colocation);
    EXPECT_EQ(x.forward_op, y.forward_op);
    ASSERT_EQ(x.dims.size(), y.dims.size());
    for (size_t k = 0; k < x.dims.size(); ++k) {
      EXPECT_EQ(x.dims[k].kind, y.dims[k].kind);
      EXPECT_EQ(x.dims[k].output_axis, y.dims[k].output_axis);
      EXPECT_EQ(x.dims[k].input_axis, y.dims[k].input_axis);
      EXPECT_EQ(x.dims[k].size, y.dims[k].size);
    }
  }
  for (int32_t e = 0; e < a.num_edges(); ++e) {
    EXPECT_EQ(a.edge(e).src, b.edge(e).src);
    EXPECT_EQ(a.edge(e).dst, b.edge(e).dst);
    EXPECT_EQ(a.edge(e).bytes, b.edge(e).bytes);
  }
}

TEST(GraphJson, RoundTripsExactly) {
  Graph g = SmallTrainingGraph();
  std::string text = GraphToJson(g);
  Expected<Graph> back = GraphFromJson(text, "g.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ExpectSameGraph(g, *back);
  EXPECT_EQ(GraphToJson(*back), text);
}

// The one-pass reader takes what GraphToJson writes and builds the same graph; so does GraphFromJson.
TEST(GraphJson, TheOnePassReaderReadsWhatTheWriterWrites) {
  for (const Graph& g : {SmallTrainingGraph(), DeriveTrainingGraph([] {
                           GraphBuilder b("chain");
                           OpId prev = b.add_op(Op{.name = "in", .type = "input", .shape = {8, 4}});
                           for (int i = 0; i < 30; ++i) {
                             Op op{.name = "op", .type = "matmul", .layer = "l", .shape = {8, 4}, .param_bytes = 64,
                                   .flops = 1e3 * i + 0.25, .colocation = i % 2 ? "even" : ""};
                             op.name += std::to_string(i);
                             op.layer += std::to_string(i % 3);
                             op.dims = {PartitionDim{DimKind::kSample, 0, 0, 8}, PartitionDim{DimKind::kParameter, 1, -1, 4}};
                             const OpId id = b.add_op(std::move(op));
                             b.add_edge(prev, id, 100 + i);
                             prev = id;
                           }
                           return std::move(b).Build().value();
                         }()).value()}) {
    const std::string text = GraphToJson(g);
    std::optional<GraphBuilder> fast = GraphBuilderFromJsonFast(text);
    ASSERT_TRUE(fast.has_value());
    Expected<Graph> built = std::move(*fast).Build();
    ASSERT_TRUE(built.ok()) << built.error().message;
    ExpectSameGraph(g, *built);
    EXPECT_EQ(GraphToJson(*built), text);
  }
}

// Keys in any order and defaults read as the checked reader reads them; a text in another form (an integral float,
// a repeated key, an unknown key, a wrong type, no op, an edge to a missing op) is left to the checked reader,
// which reads the same graph or names the problem.
TEST(GraphJson, TheOnePassReaderLeavesOtherFormsToTheCheckedReader) {
  const std::string reordered =
      R"({"edges": [[0, 1, 8]], "ops": [{"shape": [2], "type": "t", "name": "a"}, {"name": "b", "type": "u",)"
      R"( "shape": [4], "flops": 3, "dims": [{"size": 4, "output_axis": 0, "kind": "attribute"}], "role": "backward"}],)"
      R"( "version": 1, "format": "devplace.graph"})";
  std::optional<GraphBuilder> fast = GraphBuilderFromJsonFast(reordered);
  ASSERT_TRUE(fast.has_value());
  Expected<Graph> g = std::move(*fast).Build();
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->name(), "graph");
  EXPECT_EQ(g->op(1).role, OpRole::kBackward);
  EXPECT_EQ(g->op(1).flops, 3.0);
  ASSERT_EQ(g->op(1).dims.size(), 1u);
  EXPECT_EQ(g->op(1).dims[0].kind, DimKind::kAttribute);
  EXPECT_EQ(g->op(1).dims[0].input_axis, -1);
  EXPECT_EQ(g->op(0).dtype, DType::kF32);
  ExpectSameGraph(*g, GraphFromJson(reordered, "g.json").value());

  const std::string head = R"({"format": "devplace.graph", "version": 1, "ops": [{"name": "a", "type": "t", )";
  for (const std::string& other :
       {head + R"("shape": [2.0]}], "edges": []})", head + R"("shape": [2], "name": "b"}], "edges": []})",
        head + R"("shape": [2], "x": 1}], "edges": []})", head + R"("shape": [2], "flops": "1"}], "edges": []})",
        head + R"("shape": [2]}], "edges": [[0, 1, 8]]})", head + R"("shape": [2]}], "edges": [[0, 0]]})",
        std::string(R"({"format": "devplace.graph", "version": 1.0, "ops": [], "edges": []})"),
        head + R"("shape": [2]}], "edges": [], "version": 1})", std::string("[1, 2]"), std::string("7")})
    EXPECT_FALSE(GraphBuilderFromJsonFast(other).has_value()) << other;
  // An integral float the checked reader accepts: the same graph as with the integer.
  Expected<Graph> with_float = GraphFromJson(head + R"("shape": [2.0]}], "edges": []})", "g.json");
  ASSERT_TRUE(with_float.ok()) << with_float.error().message;
  EXPECT_EQ(with_float->op(0).shape, std::vector<int64_t>{2});
}

std::string GraphError(const std::string& text) {
  Expected<Graph> g = GraphFromJson(text, "g.json");
  return g.ok() ? "" : g.error().message;
}

TEST(GraphJson, ReportsFileFieldAndReason) {
  const std::string head = R"({"format": "devplace.graph", "version": 1, )";
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2], "flopz": 1}], "edges": []})"),
            "g.json: ops[0].flopz: unknown field (expected one of: colocation, dims, dtype, flops, forward_op, "
            "layer, name, param_bytes, role, shape, type)");
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2, 0]}], "edges": []})"),
            "g.json: ops[0].shape[1]: must be >= 1, got 0");
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2], "flops": "many"}], "edges": []})"),
            "g.json: ops[0].flops: expected a number, got string");
  EXPECT_EQ(GraphError(head + R"("ops": [{"type": "t", "shape": [2]}], "edges": []})"),
            "g.json: ops[0].name: missing required field");
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2]}], "edges": [[0, 3, 8]]})"),
            "g.json: edges[0][1]: must be <= 0, got 3");
  EXPECT_EQ(GraphError(R"({"format": "devplace.graph", "version": 1, "ops": [)"),
            "g.json: invalid JSON: parse error at line 1, column 52: syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal");
  EXPECT_EQ(GraphError(R"({"format": "other"})"), "g.json: format: expected \"devplace.graph\"");
  // An empty graph is an input error for every command that reads one (graph info, simulate, search, place...).
  EXPECT_EQ(GraphError(head + R"("ops": [], "edges": []})"),
            "g.json: ops: must not be empty (a graph to place needs at least one op)");
  // A number too large for a double names its field (nlohmann's own message was a bare "number overflow").
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2], "flops": 1e999}], "edges": []})"),
            "g.json: ops[0].flops: number out of range: 1e999");
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2, -1e400]}], "edges": []})"),
            "g.json: ops[0].shape[1]: number out of range: -1e400");
  EXPECT_EQ(GraphError("1e999"), "g.json: number out of range: 1e999");
  // Graph-level validation names the file and the op.
  EXPECT_EQ(GraphError(head + R"("ops": [{"name": "a", "type": "t", "shape": [2]}, {"name": "b", "type": "t",
             "shape": [2]}], "edges": [[0, 1, 8], [1, 0, 8]]})"),
            "g.json: op 'a': is on a cycle (the graph must be acyclic)");
}

TEST(GraphJson, WritesAtomicallyAndReadsBack) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/devplace_io_test_graph.json";
  Graph g = SmallTrainingGraph();
  ASSERT_TRUE(WriteGraphFile(g, path).ok());
  Expected<Graph> back = ReadGraphFile(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ExpectSameGraph(g, *back);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find("devplace_io_test_graph.json.tmp"), std::string::npos);
  std::filesystem::remove(path);
  Expected<Graph> missing = ReadGraphFile(dir + "/no-such-file.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no-such-file.json: cannot open"), std::string::npos);
  // A write into a missing directory fails cleanly without leaving anything behind.
  EXPECT_FALSE(WriteGraphFile(g, dir + "/no/such/dir/g.json").ok());
}

// A fresh, empty directory for one test.
std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/devplace_io_test_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The names in `dir`, sorted, so a test can see that no temporary was left behind.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFile, WritesThroughSymlinksToTheirTarget) {
  const std::string dir = FreshDir("symlink");
  std::ofstream(dir + "/real.json") << "old";
  std::filesystem::create_symlink("real.json", dir + "/link.json");    // relative
  std::filesystem::create_symlink(dir + "/link.json", dir + "/chain.json");  // absolute, to a link
  std::filesystem::create_symlink("absent.json", dir + "/dangling.json");
  ASSERT_TRUE(WriteFileAtomic(dir + "/link.json", "new").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.json"));
  EXPECT_EQ(Slurp(dir + "/real.json"), "new");
  ASSERT_TRUE(WriteFileAtomic(dir + "/chain.json", "newer").ok());
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/chain.json"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.json"));
  EXPECT_EQ(Slurp(dir + "/real.json"), "newer");
  ASSERT_TRUE(WriteFileAtomic(dir + "/dangling.json", "created").ok());  // creates the file the link names
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/dangling.json"));
  EXPECT_EQ(Slurp(dir + "/absent.json"), "created");
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"absent.json", "chain.json", "dangling.json", "link.json",
                                                  "real.json"}));
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, KeepsPermissionsAndRefusesDirectories) {
  const std::string dir = FreshDir("mode");
  std::ofstream(dir + "/out.json") << "old";
  ASSERT_EQ(::chmod((dir + "/out.json").c_str(), 0640), 0);
  ASSERT_TRUE(WriteFileAtomic(dir + "/out.json", "new").ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/out.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  std::filesystem::create_directory(dir + "/sub");
  Status s = WriteFileAtomic(dir + "/sub", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, dir + "/sub: is a directory");
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"out.json", "sub"}));
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, WritesIntoAFifoInsteadOfReplacingIt) {
  const std::string dir = FreshDir("fifo");
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Held open for reading and writing (Linux), so the writer's open does not block and no thread is needed;
  // non-blocking, so a replaced FIFO shows up as an empty read instead of a hang.
  const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  Status s = WriteFileAtomic(fifo, "through the pipe");
  char buffer[64] = {};
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0), "through the pipe");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(Names(dir), std::vector<std::string>{"pipe"});
  std::filesystem::remove_all(dir);
}

// /proc's magic links (what /dev/stdout is) lead to pipes that have no path: written in place too.
TEST(AtomicFile, WritesThroughAMagicLinkToAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Status s = WriteFileAtomic("/proc/self/fd/" + std::to_string(fds[1]), "to the pipe");
  ::close(fds[1]);
  char buffer[64] = {};
  const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
  ::close(fds[0]);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0), "to the pipe");
}

// Device nodes are made in a temporary directory (never the real /dev), which needs root.
TEST(AtomicFile, WritesDevicesInPlaceAndReportsAFullDevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const std::string dir = FreshDir("devices");
  const std::string null = dir + "/null", full = dir + "/full";
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  Status to_null = WriteFileAtomic(null, "discarded");
  EXPECT_TRUE(to_null.ok()) << to_null.error().message;
  Status to_full = WriteFileAtomic(full, "no room");
  ASSERT_FALSE(to_full.ok());
  EXPECT_EQ(to_full.error().message, full + ": cannot write: No space left on device");
  for (const std::string& node : {null, full}) {
    struct stat st {};
    ASSERT_EQ(::lstat(node.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << node << " was replaced";
  }
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"full", "null"}));
  std::filesystem::remove_all(dir);
}

// Under a file-size limit (SIGXFSZ ignored, as a disk-full stand-in) a write fails, the old contents stay and
// no temporary is left. Runs in a child process so the limit does not reach the test runner.
TEST(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const std::string dir = FreshDir("fsize");
  const std::string path = dir + "/out.json";
  std::ofstream(path) << "old";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {1024, 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    Status s = WriteFileAtomic(path, std::string(4096, 'x'));
    ::_exit(!s.ok() && s.error().message == path + ": cannot write: File too large" ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the write did not fail with EFBIG";
  EXPECT_EQ(Slurp(path), "old");
  EXPECT_EQ(Names(dir), std::vector<std::string>{"out.json"});
  std::filesystem::remove_all(dir);
}

// Input files over the limit are refused before their contents are read: regular files by their size, pipes
// while reading.
TEST(ReadFile, RefusesFilesOverTheLimitBeforeReadingThem) {
  const std::string dir = FreshDir("read-limit");
  const std::string path = dir + "/big.json";
  std::ofstream(path) << std::string(4096, ' ');
  EXPECT_TRUE(ReadFile(path, 4096).ok());
  Expected<std::string> big = ReadFile(path, 4095);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, path + ": larger than the 4.00 KiB limit on input files");
  // A sparse file of 2 GiB is refused by its size (nothing is read; reading it would allocate 2 GiB).
  const std::string sparse = dir + "/sparse.json";
  ASSERT_EQ(::truncate((std::ofstream(sparse), sparse.c_str()), int64_t{2} << 30), 0);
  EXPECT_EQ(ReadFile(sparse).error().message, sparse + ": larger than the 1.00 GiB limit on input files");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "0123456789", 10), 10);
  ::close(fds[1]);
  const std::string pipe = "/proc/self/fd/" + std::to_string(fds[0]);
  EXPECT_EQ(ReadFile(pipe, 8).error().message, pipe + ": larger than the 8 B limit on input files");
  ::close(fds[0]);
  std::filesystem::remove_all(dir);
}

// SHA-256 (checkpoint verification) against FIPS 180-4's examples and Python's hashlib, across block boundaries.
TEST(Sha256, MatchesTheStandardsVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::string bytes;
  for (int i = 0; i < 768; ++i) bytes.push_back(static_cast<char>(i % 256));
  EXPECT_EQ(Sha256Hex(bytes), "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
}

const char* kTopologyYaml = R"(
name: pair
devices:
  - {name: "gpu{i}", count: 2, kind: v100, host: "node{i}", peak_tflops: 15.7, peak_tflops_f16: 125,
     memory_bandwidth_gbs: 900, memory_gib: 16}
switches:
  - {name: eth}
links:
  - {hub: eth, nodes: [gpu0, gpu1], bandwidth_gbit: 10, latency_us: 25, kind: ethernet}
  - {from: gpu0, to: gpu1, bandwidth_gbs: 25, latency_us: 2, kind: nvlink}
)";

TEST(TopologyYaml, ReadsUnitsAndShortcutsAndRoundTrips) {
  Expected<Topology> t = TopologyFromYaml(kTopologyYaml, "t.yaml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->num_devices(), 2);
  EXPECT_EQ(t->device(1).name, "gpu1");
  EXPECT_EQ(t->device(1).host, "node1");
  EXPECT_EQ(t->device(0).memory_bytes, int64_t{16} << 30);
  EXPECT_EQ(t->num_links(), 5);
  EXPECT_DOUBLE_EQ(t->link(0).bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(t->link(0).latency, 25e-6);
  EXPECT_EQ(t->route(0, 1).size(), 1u);  // the direct NVLink direction
  EXPECT_EQ(t->route(1, 0).size(), 2u);  // back over Ethernet
  Expected<Topology> back = TopologyFromYaml(TopologyToYaml(*t), "back.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->num_links(), t->num_links());
  for (DeviceId d = 0; d < 2; ++d) {
    EXPECT_EQ(back->device(d).name, t->device(d).name);
    EXPECT_DOUBLE_EQ(back->device(d).peak_flops_f32, t->device(d).peak_flops_f32);
    EXPECT_DOUBLE_EQ(back->device(d).peak_flops_f16, t->device(d).peak_flops_f16);
    EXPECT_EQ(back->device(d).memory_bytes, t->device(d).memory_bytes);
  }
  for (LinkId l = 0; l < t->num_links(); ++l) {
    EXPECT_EQ(back->link(l).src, t->link(l).src);
    EXPECT_DOUBLE_EQ(back->link(l).bandwidth, t->link(l).bandwidth);
    EXPECT_DOUBLE_EQ(back->link(l).latency, t->link(l).latency);
  }
}

// A link's per-message and per-step costs (message_us, step_us) are read in every link form, written back only
// when set (a topology without them writes as before) and round-trip exactly.
TEST(TopologyYaml, MessageAndStepCostsRoundTrip) {
  Expected<Topology> plain = TopologyFromYaml(kTopologyYaml, "t.yaml");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  for (const Link& l : plain->links()) EXPECT_EQ(l.message_cost + l.step_cost, 0.0);
  EXPECT_EQ(TopologyToYaml(*plain).find("message_us"), std::string::npos);
  EXPECT_EQ(TopologyToYaml(*plain).find("step_"), std::string::npos);
  std::string text = kTopologyYaml;
  text.replace(text.find("latency_us: 25,"), 15, "latency_us: 25, message_us: 700, step_us: 0.5,");
  text.replace(text.find("latency_us: 2,"), 14, "latency_us: 2, step_us: 95, step_bandwidth_gbs: 4.5,");
  Expected<Topology> t = TopologyFromYaml(text, "t.yaml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  for (LinkId l = 0; l < 4; ++l) {  // the hub's four directions
    EXPECT_DOUBLE_EQ(t->link(l).message_cost, 700e-6);
    EXPECT_DOUBLE_EQ(t->link(l).step_cost, 0.5e-6);
  }
  EXPECT_EQ(t->link(4).message_cost, 0.0);
  EXPECT_DOUBLE_EQ(t->link(4).step_cost, 95e-6);
  EXPECT_DOUBLE_EQ(t->link(4).step_bandwidth, 4.5e9);
  EXPECT_EQ(t->link(0).step_bandwidth, 0.0);
  // The heuristics' estimate counts the per-message cost (gpu1 -> gpu0 crosses the hub: two hops).
  EXPECT_DOUBLE_EQ(t->transfer_time_estimate(1, 0, 0), 2 * (25e-6 + 700e-6));
  Expected<Topology> back = TopologyFromYaml(TopologyToYaml(*t), "back.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message;
  for (LinkId l = 0; l < t->num_links(); ++l) {
    EXPECT_DOUBLE_EQ(back->link(l).message_cost, t->link(l).message_cost) << l;
    EXPECT_DOUBLE_EQ(back->link(l).step_cost, t->link(l).step_cost) << l;
    EXPECT_DOUBLE_EQ(back->link(l).step_bandwidth, t->link(l).step_bandwidth) << l;
  }
  std::string negative = kTopologyYaml;
  negative.replace(negative.find("latency_us: 2,"), 14, "latency_us: 2, message_us: -1,");
  Expected<Topology> bad = TopologyFromYaml(negative, "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("message_us"), std::string::npos) << bad.error().message;
}

std::string TopologyError(const std::string& text) {
  Expected<Topology> t = TopologyFromYaml(text, "t.yaml");
  return t.ok() ? "" : t.error().message;
}

TEST(TopologyYaml, ReportsFileFieldAndReason) {
  EXPECT_EQ(TopologyError("name: x\ndevices: [{name: a, kind: k, peak_tflops: 1, memory_bandwidth_gbs: 1, "
                          "memory_gib: 1, colour: red}]\n"),
            "t.yaml: devices[0].colour: unknown field (expected one of: count, host, index_from, kind, "
            "memory_bandwidth_gbs, memory_gib, name, peak_tflops, peak_tflops_f16)");
  EXPECT_EQ(TopologyError("name: x\ndevices: [{name: a, kind: k, peak_tflops: 1, memory_bandwidth_gbs: 1, "
                          "memory_gib: 1}]\nlinks: [{from: a, to: b, bandwidth_gbs: 1, latency_us: 1, kind: k}]\n"),
            "t.yaml: links[0].to: unknown device or switch 'b'");
  EXPECT_EQ(TopologyError("name: x\ndevices: [{name: a, kind: k, peak_tflops: -1, memory_bandwidth_gbs: 1, "
                          "memory_gib: 1}]\n"),
            "t.yaml: devices[0].peak_tflops: must be >= 1e-09, got -1");
  EXPECT_EQ(TopologyError("name: x\ndevices: [{name: a\n"), "t.yaml: line 3: invalid YAML: end of map flow not found");
  EXPECT_EQ(TopologyError("name: x\ndevices:\n  - {name: a, kind: k, peak_tflops: 1, memory_bandwidth_gbs: 1, "
                          "memory_gib: 1}\n  - {name: b, kind: k, peak_tflops: 1, memory_bandwidth_gbs: 1, "
                          "memory_gib: 1}\n"),
            "t.yaml: device 'b' is unreachable from device 'a' (add links so every device can reach every other)");
}

TEST(StrategyJson, PartitionedConfigsRoundTrip) {
  Graph g = SmallTrainingGraph();
  Topology t = TopologyFromYaml(kTopologyYaml, "t.yaml").value();
  Strategy s = Strategy::AllOn(g.num_ops(), 1);
  // fc, its gradient and its (sharded) update all split two ways over gpu1 and gpu0.
  s.configs[g.find("fc")] = OpConfig{{1, 0}, {2, 1}};
  s.configs[g.find("fc/grad")] = OpConfig{{1, 0}, {1, 2}};
  s.configs[g.find("fc/update")] = OpConfig{{1, 0}, {2}};
  ASSERT_TRUE(ValidateStrategy(s, g, t).ok()) << ValidateStrategy(s, g, t).error().message;
  Expected<Strategy> back = StrategyFromJson(StrategyToJson(s, g, t), "p.json", g, t);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
  s.configs[g.find("fc/update")] = OpConfig{{0, 1}, {2}};  // the same devices, in another order
  EXPECT_TRUE(ValidateStrategy(s, g, t).ok());
  s.configs[g.find("fc/update")] = OpConfig{{0}, {}};
  Status st = ValidateStrategy(s, g, t);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "op 'fc/update': is in colocation group 'fc' with 'fc' but placed differently");
}

TEST(StrategyJson, ReadsBackWhatItWrites) {
  Graph g = SmallTrainingGraph();
  Topology t = TopologyFromYaml(kTopologyYaml, "t.yaml").value();
  Strategy s = Strategy::AllOn(g.num_ops(), 0);
  s.configs[g.find("x")] = OpConfig{{1}, {}};
  std::string text = StrategyToJson(s, g, t);
  EXPECT_NE(text.find("\"gpu1\""), std::string::npos);
  Expected<Strategy> back = StrategyFromJson(text, "p.json", g, t);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);

  std::string bad = text;
  bad.replace(bad.find("\"gpu1\""), 6, "\"gpu9\"");
  Expected<Strategy> unknown = StrategyFromJson(bad, "p.json", g, t);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("p.json: ops["), std::string::npos);
  EXPECT_NE(unknown.error().message.find("unknown device 'gpu9' (topology 'pair')"), std::string::npos);

  std::string huge = text;
  huge.replace(huge.find("\"ops\""), 5, "\"ops\": [{\"op\": \"x\", \"degrees\": [1e999]}], \"unused\"");
  Expected<Strategy> overflow = StrategyFromJson(huge, "p.json", g, t);
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.error().message, "p.json: ops[0].degrees[0]: number out of range: 1e999");

  std::string unnamed = text;
  unnamed.replace(unnamed.find("\"graph\": \"small\""), 16, "\"graph\": \"\"");
  Graph other = DeriveTrainingGraph(GraphBuilder("empty").Build().value()).value();
  Expected<Strategy> wrong_count = StrategyFromJson(unnamed, "p.json", other, t);
  ASSERT_FALSE(wrong_count.ok());
  EXPECT_NE(wrong_count.error().message.find("p.json: ops: has"), std::string::npos);
}

// A strategy names the graph it was made for; given with another graph (even one whose op names and count
// happen to match) it is refused instead of being applied to the wrong model.
TEST(StrategyJson, RefusesAStrategyForAnotherGraph) {
  Graph g = SmallTrainingGraph();
  Topology t = TopologyFromYaml(kTopologyYaml, "t.yaml").value();
  const std::string text = StrategyToJson(Strategy::AllOn(g.num_ops(), 0), g, t);
  Graph renamed = GraphFromJson([&] {
    std::string j = GraphToJson(g);
    return j.replace(j.find("\"name\": \"small\""), 15, "\"name\": \"other\"");
  }(), "other.json").value();
  Expected<Strategy> wrong = StrategyFromJson(text, "p.json", renamed, t);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "p.json: graph: the strategy is for graph 'small', not 'other'");
}

}  // namespace
}  // namespace devplace

// Defects found by trying devplace as a hostile user would (issue 23), each reproduced through the program:
// `-o` through symlinks and into special files, huge numbers printed in full, an empty graph given to `place`,
// and the executor running out of memory.
#include <filesystem>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/apps/cli_runner.h"

namespace devplace::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kSearch = {"search", "--algo", "single", "-g", "g.json", "-t", "t.yaml", "-o"};

std::vector<std::string> SearchTo(const std::string& output) {
  std::vector<std::string> args = kSearch;
  args.push_back(output);
  return args;
}

std::string Inputs(const std::string& name) {
  const std::string dir = FreshDir(name);
  WriteText(dir, "g.json", kTinyGraph);
  WriteText(dir, "t.yaml", kPairTopology);
  return dir;
}

bool IsOneLine(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

TEST(CliOutput, WritesThroughASymlinkToItsTarget) {
  const std::string dir = Inputs("symlink");
  WriteText(dir, "results/real.json", "old");
  fs::create_symlink("results/real.json", dir + "/link.json");
  const CliRun run = RunDevplace(SearchTo("link.json"), dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::is_symlink(dir + "/link.json"));
  EXPECT_NE(ReadText(dir + "/results/real.json").find("\"devplace.strategy\""), std::string::npos);
  EXPECT_EQ(ListTree(dir), (std::vector<std::string>{"g.json", "link.json", "results/", "results/real.json",
                                                     "t.yaml"}));
}

TEST(CliOutput, WritesIntoAFifoWithoutReplacingIt) {
  const std::string dir = Inputs("fifo");
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Held open for reading and writing: the program's open does not block, and its output waits in the pipe.
  const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  const CliRun run = RunDevplace(SearchTo("pipe"), dir);
  std::string received(1 << 16, '\0');
  const ssize_t n = ::read(fd, received.data(), received.size());
  ::close(fd);
  received.resize(n > 0 ? static_cast<size_t>(n) : 0);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(received.find("\"devplace.strategy\""), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
}

// /dev/null and /dev/full stand-ins made with mknod in the test's directory (never the real /dev).
TEST(CliOutput, WritesDevicesInPlaceAndReportsAFullOne) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const std::string dir = Inputs("devices");
  ASSERT_EQ(::mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(::mknod((dir + "/full").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  const CliRun to_null = RunDevplace(SearchTo("null"), dir);
  EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
  const CliRun to_full = RunDevplace(SearchTo("full"), dir);
  EXPECT_EQ(to_full.exit_code, 1);
  EXPECT_EQ(to_full.err, "devplace: full: cannot write: No space left on device\n");
  for (const char* node : {"/null", "/full"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((dir + node).c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << node << " was replaced by a regular file";
  }
  EXPECT_EQ(ListTree(dir), (std::vector<std::string>{"full", "g.json", "null", "t.yaml"}));
}

// An op with 1e308 FLOPs is refused in one short line (the message printed the number's 309 digits).
TEST(CliOutput, HugeFlopsAreReportedShort) {
  const std::string dir = FreshDir("huge-flops");
  WriteText(dir, "g.json", Replace(kTinyGraph, R"("flops": 8388608)", R"("flops": 1e308)"));
  const CliRun run = RunDevplace({"graph", "info", "g.json"}, dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "devplace: g.json: op 'fc': flops 1e+308 is absurdly large (> 1e18)\n");
}

TEST(CliPlace, AnEmptyGraphIsAOneLineInputError) {
  const std::string dir = Inputs("place-empty");
  WriteText(dir, "empty.json", R"({"format": "devplace.graph", "version": 1, "name": "empty", "ops": [], "edges": []})");
  const CliRun run = RunDevplace({"place", "-g", "empty.json", "-t", "t.yaml", "-o", "out.json"}, dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(IsOneLine(run.err)) << run.err;
  EXPECT_EQ(run.err.rfind("devplace: empty.json: ", 0), 0u) << run.err;
  EXPECT_FALSE(fs::exists(dir + "/out.json"));
}

// A step whose tensors cannot be allocated (an activation of 2^38 floats: 1 TiB) fails with one line naming the op,
// the device and the amount, not LibTorch's allocator text.
TEST(CliRun, ExecutorOutOfMemoryIsOneClearLine) {
  const std::string dir = FreshDir("exec-oom");
  WriteText(dir, "g.json", Replace(kTinyGraph, R"("shape": [64, 256]})", R"("shape": [4194304, 65536]})"));
  WriteText(dir, "t.yaml", ReadText(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/cpu-local.yaml"));
  WriteText(dir, "p.json", R"({"format": "devplace.strategy", "version": 1, "graph": "tiny",
    "ops": [{"op": "x", "devices": ["cpu0"]}, {"op": "fc", "devices": ["cpu0"]}]})");
  // An address-space limit makes the 1 TiB allocation fail the same way whatever the machine's overcommit policy.
  const CliRun run = RunDevplace({"run", "-g", "g.json", "-t", "t.yaml", "-p", "p.json", "--backend", "cpu"}, dir,
                                 CliLimits{.address_space_bytes = 64L << 30});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(IsOneLine(run.err)) << run.err;
  EXPECT_NE(run.err.find("out of memory on cpu"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("cannot allocate 1.00 TiB"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("alloc_cpu"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("enforce fail"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace devplace::testing

#include "tests/apps/cli_runner.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace devplace::testing {

namespace fs = std::filesystem;

const char* const kTinyGraph = R"({"format": "devplace.graph", "version": 1, "name": "tiny",
 "ops": [{"name": "x", "type": "input", "layer": "in", "shape": [64, 256]},
         {"name": "fc", "type": "matmul", "layer": "fc", "shape": [64, 256], "param_bytes": 262144,
          "flops": 8388608}],
 "edges": [[0, 1, 65536]]}
)";

const char* const kPairTopology = R"(name: pair
devices:
  - {name: "gpu{i}", count: 2, kind: v100, host: node0, peak_tflops: 15.7, memory_bandwidth_gbs: 900, memory_gib: 16}
links:
  - {from: gpu0, to: gpu1, bandwidth_gbs: 25, latency_us: 2, kind: nvlink}
  - {from: gpu1, to: gpu0, bandwidth_gbs: 25, latency_us: 2, kind: nvlink}
)";

const char* const kTinyStrategy = R"({"format": "devplace.strategy", "version": 1, "graph": "tiny", "topology": "pair",
 "ops": [{"op": "x", "devices": ["gpu0"]}, {"op": "fc", "devices": ["gpu1"]}]}
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the fixture";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

CliRun RunDevplace(const std::vector<std::string>& args, const std::string& cwd, const CliLimits& limits) {
  return FinishDevplace(StartDevplace(args, cwd, limits));
}

CliProcess StartDevplace(const std::vector<std::string>& args, const std::string& cwd, const CliLimits& limits) {
  const std::string out_path = cwd + "/../" + fs::path(cwd).filename().string() + ".stdout";
  const std::string err_path = cwd + "/../" + fs::path(cwd).filename().string() + ".stderr";
  std::vector<std::string> argv_strings = {DEVPLACE_BIN};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return {};
  if (child == 0) {
    // Only async-signal-safe calls until exec.
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (limits.file_size_bytes >= 0) {
      std::signal(SIGXFSZ, SIG_IGN);
      struct rlimit limit {static_cast<rlim_t>(limits.file_size_bytes), static_cast<rlim_t>(limits.file_size_bytes)};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    if (limits.address_space_bytes >= 0) {
      struct rlimit limit {static_cast<rlim_t>(limits.address_space_bytes),
                           static_cast<rlim_t>(limits.address_space_bytes)};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    ::alarm(static_cast<unsigned>(limits.timeout_seconds));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return {child, out_path, err_path};
}

CliRun FinishDevplace(const CliProcess& process) {
  CliRun run;
  if (process.pid < 0) return run;
  int status = 0;
  while (::waitpid(process.pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = ReadText(process.out_path);
  run.err = ReadText(process.err_path);
  fs::remove(process.out_path);
  fs::remove(process.err_path);
  return run;
}

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("devplace-cli-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void WriteText(const std::string& dir, const std::string& name, const std::string& text) {
  const fs::path path = fs::path(dir) / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string WithoutLastColumn(const std::string& text) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    out += line.substr(0, line.rfind(',')) + "\n";
    start = end + 1;
  }
  return out;
}

std::vector<std::string> ListTree(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    std::string name = entry.path().lexically_relative(dir).string();  // links are listed, not followed
    if (entry.is_directory() && !entry.is_symlink()) name += "/";
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace devplace::testing

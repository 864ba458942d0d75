// Running the built `devplace` program from tests: a fresh working directory per case, the program's exit
// status and its stdout and stderr, and the files it left behind.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace devplace::testing {

// What one run of the program did.
struct CliRun {
  int exit_code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out;     // stdout
  std::string err;     // stderr
};

// How to run it.
struct CliLimits {
  long file_size_bytes = -1;      // RLIMIT_FSIZE for the child (-1: none); SIGXFSZ is ignored so writes fail (EFBIG)
  long address_space_bytes = -1;  // RLIMIT_AS for the child (-1: none)
  int timeout_seconds = 120;      // SIGALRM kills a run that hangs
};

// Runs DEVPLACE_BIN with `args` in directory `cwd` (stdin from /dev/null). Never throws.
CliRun RunDevplace(const std::vector<std::string>& args, const std::string& cwd, const CliLimits& limits = {});

// A program started by StartDevplace and not yet waited for.
struct CliProcess {
  int pid = -1;  // -1: it could not be started
  std::string out_path, err_path;
};
// Starts DEVPLACE_BIN as RunDevplace does, without waiting (to signal it while it runs).
CliProcess StartDevplace(const std::vector<std::string>& args, const std::string& cwd, const CliLimits& limits = {});
// Waits for a started program and collects what it did.
CliRun FinishDevplace(const CliProcess& process);

// A fresh, empty directory under the test temp dir, named after `name` and the process id.
std::string FreshDir(const std::string& name);
// Writes `text` to dir/name, creating subdirectories.
void WriteText(const std::string& dir, const std::string& name, const std::string& text);
// Reads a whole file ("" when it cannot be read).
std::string ReadText(const std::string& path);
// `text` (CSV) with the last column of every line removed (wall times, which differ between runs).
std::string WithoutLastColumn(const std::string& text);
// Every path under `dir`, relative and sorted (directories end with '/').
std::vector<std::string> ListTree(const std::string& dir);

// Valid inputs the catalogue mutates: a two-op forward graph "tiny" (x -> fc), a two-device topology "pair"
// (gpu0, gpu1) and a placement of "tiny" on "pair".
extern const char* const kTinyGraph;
extern const char* const kPairTopology;
extern const char* const kTinyStrategy;
// `text` with the first occurrence of `from` replaced by `to` (the test fails if `from` is absent).
std::string Replace(std::string text, const std::string& from, const std::string& to);

}  // namespace devplace::testing

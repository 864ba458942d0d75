#include "core/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/format.h"

namespace devplace {

namespace {

std::string Reason() { return std::strerror(errno); }

// The directory part of `path` ("." when it has none).
std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Follows `path` through symlinks (at most 40, as the kernel does) to the file a write should reach; a dangling
// link resolves to the path it names. Relative link targets are taken from the link's directory.
Expected<std::string> ResolveLinks(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
    const ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
    if (n < 0) return Error{path + ": cannot write: cannot read symlink: " + Reason()};
    target.resize(static_cast<size_t>(n));
    current = (!target.empty() && target[0] == '/') ? target : DirName(current) + "/" + target;
  }
  return Error{path + ": cannot write: too many levels of symbolic links"};
}

// Writes all of `contents` to `fd`, retrying on EINTR and short writes. Sets errno on failure.
bool WriteAll(int fd, const std::string& contents) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// A FIFO, device or socket: written in place (replacing it would destroy it).
Status WriteSpecial(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": cannot write: " + Reason()};
  if (!WriteAll(fd, contents)) {
    const std::string reason = Reason();
    ::close(fd);
    return Error{path + ": cannot write: " + reason};
  }
  if (::close(fd) != 0) return Error{path + ": cannot write: " + Reason()};
  return Status::Ok();
}

// fsyncs a directory so that a rename into it survives a crash. Filesystems that cannot sync directories
// (EINVAL) are accepted.
bool SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;
  ::close(fd);
  return ok;
}

// Temporaries are named <target>.tmp.<pid>.<n>: unique across threads and processes.
std::atomic<uint64_t> temp_counter{0};

}  // namespace

Expected<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": cannot open: " + Reason()};
  struct stat st {};
  const bool known = ::fstat(fd, &st) == 0;
  if (known && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error{path + ": is a directory"};
  }
  const auto too_large = [&]() {
    ::close(fd);
    return Error{path + ": larger than the " + FormatBytes(static_cast<double>(max_bytes)) + " limit on input files"};
  };
  if (known && S_ISREG(st.st_mode) && st.st_size > max_bytes) return too_large();
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = Reason();
      ::close(fd);
      return Error{path + ": read failed: " + reason};
    }
    if (n == 0) break;
    if (static_cast<int64_t>(text.size()) + n > max_bytes) return too_large();
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  struct stat st {};
  // What the path leads to, through any links (also /proc's magic links such as /dev/stdout to a pipe, which
  // readlink cannot turn into a path): a special file is written in place.
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return Error{path + ": is a directory"};
    return WriteSpecial(path, contents);
  }
  Expected<std::string> resolved = ResolveLinks(path);
  if (!resolved) return resolved.error();
  const std::string& target = *resolved;
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))  // replaced by something else since the stat above
    return Error{path + ": cannot write: it stopped being a regular file while being resolved"};

  const std::string temp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temp_counter++);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return Error{path + ": cannot write: " + Reason()};
  auto fail = [&](const std::string& what, const std::string& reason) -> Status {
    ::unlink(temp.c_str());
    return Error{path + ": " + what + ": " + reason};
  };
  if (exists && ::fchmod(fd, st.st_mode & 07777) != 0) {
    const std::string reason = Reason();
    ::close(fd);
    return fail("cannot write", reason);
  }
  if (!WriteAll(fd, contents) || ::fsync(fd) != 0) {
    const std::string reason = Reason();
    ::close(fd);
    return fail("cannot write", reason);
  }
  if (::close(fd) != 0) return fail("cannot write", Reason());
  if (::rename(temp.c_str(), target.c_str()) != 0) return fail("cannot replace", Reason());
  if (!SyncDirectory(DirName(target))) return Error{path + ": cannot sync its directory: " + Reason()};
  return Status::Ok();
}

}  // namespace devplace

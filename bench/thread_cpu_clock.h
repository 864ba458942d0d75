// CPU time of the calling thread, for benchmarks that time parts of an iteration themselves.
#pragma once

#include <time.h>

namespace devplace::bench {

// Seconds of CPU time the calling thread has used (robust to other processes sharing the machine; not to what
// they do to the caches).
struct ThreadCpuClock {
  using time_point = double;
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
};

}  // namespace devplace::bench

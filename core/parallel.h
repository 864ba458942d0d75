// Running independent items on the machine's cores, with results that do not depend on how many.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace devplace {

// The machine's hardware threads (at least 1).
int32_t HardwareThreads();

// Runs work(i) once for every i in [0, count) on up to min(threads, count) threads (the caller among them; threads
// <= 1 runs every item on the caller, in order). Items are claimed in index order from a shared counter, so `work`
// must write only what belongs to its item and must not depend on which thread runs it, or how many do. The other
// threads are kept across calls (a process-wide pool, started on first use; a call made while another holds it,
// or from inside an item, starts threads of its own); one that has not started when the caller runs out of items
// takes no part. `thread_setup`, when given, runs on each thread that takes part (the caller included) before its
// first item, when more than one thread may run; what it sets per thread stays on a pool thread after the call. An
// exception thrown by `work` stops the claiming of new items and is rethrown in the caller after every thread has
// stopped.
void ParallelFor(size_t count, int32_t threads, const std::function<void(size_t)>& work,
                 const std::function<void()>& thread_setup = nullptr);

}  // namespace devplace

// The time rule's view of a client process (docs/verbs-programs.md, "Time"): whether any of its
// threads is running its own code, read from /proc. A thread that is waiting in a verb is known
// to the server by its request; every other thread counts as off the CPU only when the kernel
// says it sleeps.
#pragma once
#include <sys/types.h>

namespace vhca::run_state {

// Voluntary context switches of one thread so far, or -1 if it is gone. Read before a reply
// wakes the thread: while the count is unchanged it has not yet gone back to sleep anywhere.
long voluntary_switches(pid_t pid, pid_t tid);

// Whether any thread of `pid` is running or runnable (R) or in an uninterruptible wait (D,
// counted as running: it is on its way back to its own code). A gone process runs nothing.
bool any_thread_running(pid_t pid);

}  // namespace vhca::run_state

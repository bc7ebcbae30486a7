// The CQ verbs (InfiniBand / ib_* style) on top of the driver: create, query, resize, destroy,
// completion and async handlers, poll, request notification, modify moderation, peek.
// Every call runs in an SC_THREAD; errors return a negative errno and leave a message naming the
// cause in Driver::last_error().
#pragma once
#include <cstdint>
#include <functional>

#include "firmware-shim/driver.h"
#include "firmware-shim/host_cpu.h"
#include "firmware-shim/queue_format.h"
#include "model/cq/cq_types.h"

namespace vhca {

struct CqModeration {
  uint16_t count = 0;
  uint16_t period_us = 0;
  PeriodMode mode = PeriodMode::eqe;
};

// Host-side state of a CQ.
struct Cq {
  Driver* dev = nullptr;
  uint32_t cqn = 0;
  uint32_t cqe = 0;  // actual size
  uint8_t log_size = 0;
  uint64_t buf = 0;
  uint64_t dbr = 0;
  uint32_t ci = 0;
  uint8_t arm_sn = 0;
  uint32_t comp_vector = 0;
  uint64_t events = 0;
  bool in_error = false;
  uint32_t wq_depth = 0;  // sum of the depths of the SQs and RQs associated with it (S15)
  void* context = nullptr;
  std::function<void(Cq&)> comp_handler;  // S5: called with the CQ when its notification fires
  // The handler is quiet (CpuWork::next_quiet): the EQ handler's step that calls it may run ahead.
  bool comp_handler_quiet = false;
  bool user_memory = false;  // its buffer and doorbell record are a program's (not freed here)
};

// A CQ's buffer and doorbell record in memory a verbs program provides (vhca-sim serve: shared
// with the program), mapped and pre-filled by the caller: the driver neither allocates nor frees it.
struct UserCqMemory {
  uint64_t buf = 0, dbr = 0;
};

struct CqInfo {
  uint32_t cqe = 0;
  CqModeration moderation;
  uint32_t producer_index = 0;
  uint32_t state = 0;
};

enum NotifyFlags : uint32_t { kNotifyNext = 0, kNotifySolicited = 1, kReportMissedEvents = 2 };

namespace verbs {

// S1: at least min_cqe entries; the actual size is in (*out)->cqe. -EINVAL if min_cqe is below
// 1 or above the device maximum, or comp_vector does not exist.
int create_cq(Driver& dev, int min_cqe, uint32_t comp_vector, Cq** out, const CqModeration& mod = {},
              uint32_t create_flags = 0, const UserCqMemory* user = nullptr);
// log2 of the entries create_cq gives for `min_cqe` (the rule, for callers that provide the memory).
uint8_t cq_log_size(int min_cqe);
int query_cq(Cq& cq, CqInfo& info);                     // S2
int resize_cq(Cq& cq, int min_cqe);                     // S3: returns the new actual size or -errno
int destroy_cq(Cq* cq);                                 // S4
// The host side of a CQ the device no longer has: forgets it, unmaps its ring and doorbell record
// (unless a program's) and frees it. destroy_cq ends with it; a caller that cannot destroy a CQ on
// a device that was reset under it releases the CQ with it.
void abandon_cq(Cq* cq);
// S5. `quiet`: the handler only reads and writes host memory, charges CPU time and starts work on
// the host's cores (HostCpu::start), so the step of the EQ handler that calls it may run ahead of
// its instant (CpuWork::next_quiet).
void set_comp_handler(Cq& cq, std::function<void(Cq&)> handler, bool quiet = false);
// S6: up to n oldest CQEs, consumed in order; 0 when empty; never blocks.
int poll_cq(Cq& cq, int n, Wc* wc, CpuContext ctx = CpuContext::app);
// S7-S11: arm for the next (or next solicited) CQE. With kReportMissedEvents returns 1 if CQEs
// are already present (the caller must poll them: they will not raise an event), else 0.
int req_notify_cq(Cq& cq, uint32_t flags, CpuContext ctx = CpuContext::app);
int modify_cq(Cq& cq, const CqModeration& mod);         // S12
int peek_cq(Cq& cq, int n);                             // S13: CQEs available, not consumed

}  // namespace verbs
}  // namespace vhca

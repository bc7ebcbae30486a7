// Helpers shared by the test executables.
#pragma once
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "firmware-shim/verbs.h"
#include "model/common/log.h"
#include "model/regs/tables.h"
#include "sim/system.h"

namespace vhca::test {

// Each test file defines this (an empty body keeps the defaults).
void configure(SystemConfig& cfg);
System& sys();

inline CompletionRecord recv_record(uint32_t cqn, uint64_t wr_id, bool se = false) {
  CompletionRecord r;
  r.cqn = cqn;
  r.is_send = false;
  r.opcode = cqe::kRespSend;
  r.wr_id = wr_id;
  r.byte_cnt = 64;
  r.qpn = 0x11;
  r.se = se;
  return r;
}

inline CompletionRecord send_record(uint32_t cqn, uint64_t wr_id) {
  CompletionRecord r;
  r.cqn = cqn;
  r.is_send = true;
  r.opcode = cqe::kReq;
  r.send_opcode = 0x0A;  // SEND
  r.wr_id = wr_id;
  r.byte_cnt = 128;
  r.qpn = 0x12;
  return r;
}

inline CompletionRecord error_record(uint32_t cqn, uint64_t wr_id, uint8_t syndrome, bool is_send = true) {
  CompletionRecord r = is_send ? send_record(cqn, wr_id) : recv_record(cqn, wr_id);
  r.syndrome = syndrome;
  return r;
}

inline void boot() {
  CommandResult r = sys().driver.boot();
  INFO(r.message());
  REQUIRE(r.ok());
}

inline Cq* make_cq(int size, const CqModeration& mod = {}, uint32_t vector = 0, uint32_t flags = 0) {
  Cq* cq = nullptr;
  int rc = verbs::create_cq(sys().driver, size, vector, &cq, mod, flags);
  INFO(sys().driver.last_error());
  REQUIRE(rc == 0);
  return cq;
}

inline void wait_us(double us) { sc_core::wait(sc_core::sc_time(us, sc_core::SC_US)); }

// Every completion event the driver dispatches: host time, CQN and the EQE's device cycle.
struct EventLog {
  std::vector<sc_core::sc_time> times;
  std::vector<uint32_t> cqns;
  std::vector<uint64_t> eqe_cycles;
  void attach() {
    sys().driver.on_completion_event.add([this](Cq& cq, const uint8_t* e) {
      times.push_back(sc_core::sc_time_stamp());
      cqns.push_back(cq.cqn);
      eqe_cycles.push_back(get_field(e, eqe::timestamp));
    });
  }
  size_t count() const { return times.size(); }
  size_t count_for(uint32_t cqn) const { return size_t(std::count(cqns.begin(), cqns.end(), cqn)); }
};

// Polls everything available; returns the WCs.
inline std::vector<Wc> drain(Cq& cq) {
  std::vector<Wc> out;
  Wc wc[16];
  int n;
  while ((n = verbs::poll_cq(cq, 16, wc)) > 0) out.insert(out.end(), wc, wc + n);
  return out;
}

// Boot, create a CQ, log its events, arm it and let the arm land: the start of most tests.
inline Cq* boot_armed_cq(EventLog& ev, int size, const CqModeration& mod = {}, uint32_t notify = kNotifyNext) {
  boot();
  Cq* cq = make_cq(size, mod);
  ev.attach();
  verbs::req_notify_cq(*cq, notify);
  wait_us(1);
  return cq;
}

// Writes an arm doorbell with the given consumer index and command (0 NEXT, 1 SOLICITED) and the
// CQ's current sequence number, as a driver would, without the verbs layer's bookkeeping.
inline uint64_t arm_raw(Cq& cq, uint32_t ci, uint32_t cmd) {
  uint64_t db = 0;
  db = with_bits(db, armdb::cqn, cq.cqn);
  db = with_bits(db, armdb::arm_ci, ci);
  db = with_bits(db, armdb::arm_cmd, cmd);
  db = with_bits(db, armdb::arm_sn, cq.arm_sn);
  sys().cpu.mmio_write64(Driver::offset_of(reg::cq_arm_db), db);
  return db;
}

// A cycle comfortably ahead of now, to schedule injections from.
inline uint64_t soon(uint64_t ahead = 10) { return sys().cycle() + ahead; }

// The HCA's CQ writer is the pipelined one (docs/cosim-guide.md, "The contract"): a completion
// record injected on cycle k is acted on, its CQE stamped, on k + kCompletionActs (it enters the
// replay buffer, then three stages); an arm, a control or a consumer-index response reaching the
// writer on cycle p is acted on on p + 3; an event the action raises is stamped
// by the EQ engine kEventStamped cycles after it.
constexpr uint64_t kCompletionActs = 4;
constexpr uint64_t kEventStamped = 2;
// A period begun by the action on cycle `start` ends on the writer's P-th microsecond tick after
// the one it began in; the wheel offers the CQ 2 cycles into that tick, and stage 3 acts 2 later.
inline uint64_t period_end_action(uint64_t start, uint32_t period_us) {
  return sys().hca.cq.engine().period_end_cycle(start, period_us) + 4;
}

// Waits for the next edge and returns it: the cycle a doorbell written now is counted from (an arm
// written on edge m acts on m+106 with the default link: [S9] in test_notify.cpp).
inline uint64_t next_edge() {
  const uint64_t m = sys().cycle() + 1;
  sys().wait_cycle(m);
  return m;
}

// S26's sequence: a CQ with count 8 and a 10 us EQE-mode period, armed; a CQE on k1 (the period
// since creation has passed: event at once, the period restarts with that action); two CQEs while the CQ
// is disarmed; on edge m an arm whose index (1) is behind both. Returns {k1, m}.
struct OwedArm {
  Cq* cq = nullptr;
  uint64_t k1 = 0, m = 0;
};
inline OwedArm arm_with_two_owed(EventLog& ev) {
  OwedArm o;
  boot();
  o.cq = make_cq(64, CqModeration{8, 10, PeriodMode::eqe});  // 10 us = 5000 cycles
  ev.attach();
  verbs::req_notify_cq(*o.cq, kNotifyNext);
  wait_us(12);
  o.k1 = soon();
  sys().hca.inject(recv_record(o.cq->cqn, 1), o.k1);
  wait_us(2);
  REQUIRE(ev.count() == 1);
  CHECK(ev.eqe_cycles[0] == o.k1 + kCompletionActs + kEventStamped);
  const uint64_t k2 = soon();
  sys().hca.inject(recv_record(o.cq->cqn, 2), k2);
  sys().hca.inject(recv_record(o.cq->cqn, 3), k2 + 1);
  wait_us(1);
  o.m = next_edge();
  arm_raw(*o.cq, 1, 0);
  return o;
}



}  // namespace vhca::test

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

// A cycle comfortably ahead of now, to schedule injections from.
inline uint64_t soon(uint64_t ahead = 10) { return sys().cycle() + ahead; }


}  // namespace vhca::test

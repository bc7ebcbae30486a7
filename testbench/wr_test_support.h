// Helpers for the work-request tests: one host's side of a connection, an RC pair across the
// two hosts, bounded polling and WR builders.
#pragma once
#include <utility>
#include <vector>

#include "sim/fabric.h"
#include "testbench/test_support.h"

namespace vhca::test {
namespace fb = vhca::fabric;

// One host's side of an RC connection: PD, send and receive CQs, QP, and a registered buffer.
using Side = fb::Endpoint;

inline Side make_side(uint32_t host, uint64_t buf_len, QpType type = QpType::rc, uint32_t depth = 64) {
  return fb::make_endpoint(sys().node(host).driver, buf_len, type, depth);
}

// Boots both hosts and connects an RC pair.
inline std::pair<Side, Side> rc_pair(uint64_t buf_len = 1 << 20, const fb::RcParams& p = {}) {
  for (uint32_t h = 0; h < 2; ++h) {
    CommandResult r = sys().node(h).driver.boot();
    INFO(r.message());
    REQUIRE(r.ok());
  }
  Side a = make_side(0, buf_len), b = make_side(1, buf_len);
  fb::connect_rc(*a.qp, *b.qp, p);
  return {a, b};
}

// The attributes that move an RTS QP to ERR (its queues then flush).
inline QpAttr rts_to_error() {
  QpAttr a;
  a.cur_state = QpState::rts;
  a.new_state = QpState::err;
  return a;
}

// Polls `cq` until `n` WCs have arrived or `limit_us` of simulated time passes.
inline std::vector<Wc> poll_n(Cq& cq, size_t n, double limit_us = 2000) {
  std::vector<Wc> out;
  const sc_core::sc_time end = sc_core::sc_time_stamp() + sc_core::sc_time(limit_us, sc_core::SC_US);
  Wc wc[16];
  while (out.size() < n && sc_core::sc_time_stamp() < end) {
    int got = verbs::poll_cq(cq, 16, wc);
    if (got > 0)
      out.insert(out.end(), wc, wc + got);
    else
      wait_us(0.1);
  }
  return out;
}

inline SendWr send_wr(uint64_t wr_id, const Sge& s, uint8_t opcode = sqwqe::kSend, uint32_t flags = kSendSignaled) {
  SendWr w;
  w.wr_id = wr_id;
  w.opcode = opcode;
  w.flags = flags;
  w.sg_list = {s};
  return w;
}

// A WR aimed at `remote` + `offset` (RDMA WRITE and READ, atomics; a SEND ignores the target).
inline SendWr remote_wr(uint64_t wr_id, const Sge& s, uint8_t opcode, const fb::Buffer& remote, uint64_t offset = 0) {
  SendWr w = send_wr(wr_id, s, opcode);
  w.remote_addr = remote.addr + offset;
  w.rkey = remote.mr->rkey;
  return w;
}


}  // namespace vhca::test

// What flows into and out of the CQ writer. These are also the ports of the RTL CQ writer
// (s_cpl, s_arm, s_ctl, s_ci; m_dma, m_ci_req, m_event).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "model/regs/codes.h"
#include "tlm/posted_tag.h"

namespace vhca {

// A completion record: what the transport engine (or the injection port) hands to the CQ writer.
struct CompletionRecord {
  uint32_t cqn = 0;
  bool is_send = false;      // SQ completion (requester) or RQ completion (responder)
  uint8_t opcode = 0;        // CQE opcode for a successful completion (cqe::kReq, kRespSend, ...)
  uint8_t send_opcode = 0;   // requester: the WQE opcode
  uint8_t syndrome = 0;      // 0 success, else an IB completion error (tables.h syndrome::)
  uint8_t vendor_syndrome = 0;
  uint64_t wr_id = 0;
  uint32_t byte_cnt = 0;
  bool imm_present = false;
  uint32_t imm = 0;
  uint32_t qpn = 0;
  uint32_t src_qpn = 0;
  uint16_t slid = 0;
  uint8_t sl = 0;
  bool grh = false;
  uint16_t pkey_index = 0;
  bool se = false;           // solicited event bit of the message
  uint16_t wqe_counter = 0;
  // Counts toward a SOLICITED arm: a successful receive with SE, or any error (S8).
  bool solicited() const { return syndrome != 0 || (!is_send && se); }
};


struct ArmRequest {
  uint32_t cqn = 0;
  uint8_t sn = 0;
  ArmCmd cmd = ArmCmd::next;
  uint32_t ci = 0;
};

enum class PeriodMode : uint8_t { eqe = 0, cqe = 1 };  // timer restarts at each event / each CQE

struct CqConfig {
  uint8_t log_size = 0;
  uint64_t base = 0;
  uint64_t dbr = 0;
  uint32_t eqn = 0;
  uint16_t mod_count = 0;    // 0: no count threshold
  uint16_t mod_period = 0;   // microseconds, 12 bits; 0: no period
  PeriodMode period_mode = PeriodMode::eqe;
  bool overrun_ignore = false;
  bool always_armed = false;
};

struct CqControl {
  using Op = CqControlOp;
  Op op = Op::create;
  uint32_t cqn = 0;
  CqConfig cfg;
};

struct CiResponse {
  uint32_t cqn = 0;
  uint32_t ci = 0;
  bool ok = true;  // false: the doorbell record read failed
};

struct CiRequest {
  uint32_t cqn = 0;
  uint64_t dbr = 0;
};

struct DmaWrite {
  uint64_t addr = 0;
  uint32_t len = 0;
  std::array<uint8_t, 64> data{};
  std::vector<uint8_t> bulk;  // payload writes: the data, when not in `data` (len ignored)
  DmaSource source = DmaSource::other;
  uint32_t id = 0;
  uint32_t bytes() const { return bulk.empty() ? len : uint32_t(bulk.size()); }
  uint8_t* payload() { return bulk.empty() ? data.data() : bulk.data(); }
};

// An event for the EQ engine: a completion event for an EQ, or an asynchronous event.
struct DeviceEvent {
  uint8_t type = 0;     // eqe:: event type
  uint32_t eqn = 0;     // completion events: the CQ's EQ; async events go to the async EQ
  uint32_t cqn = 0;
  uint8_t syndrome = 0;
  uint64_t data = 0;
};

const char* state_name(CqState s);

}  // namespace vhca

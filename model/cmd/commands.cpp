#include "model/cmd/commands.h"

#include <fmt/format.h>

namespace vhca::cmd {

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> all = {
      {kQueryCap, "QUERY_CAP", "report the device limits and capabilities; allowed before INIT", {},
       {{0, "log_max_cq", "log2 of the CQC table capacity"},
        {1, "log_max_cq_sz", "log2 of the largest CQ (entries)"},
        {2, "log_max_eq", "log2 of the EQC table capacity"},
        {3, "log_max_eq_sz", "log2 of the largest EQ (entries)"},
        {4, "num_msix", "MSI-X vectors"},
        {5, "num_uars", "UAR doorbell pages"},
        {6, "flags", "bit0 resize, bit1 moderation, bit2 CQE period mode, bit3 always-armed"},
        {7, "core_clock_khz", "core clock"},
        {8, "max_mod_count", "largest moderation count"},
        {9, "max_mod_period", "largest moderation period (us)"}}},
      {kInit, "INIT", "bring the device from reset to initialized; refused when already initialized", {}, {}},
      {kTeardown, "TEARDOWN", "destroy every object and return to the uninitialized state", {}, {}},
      {kCreateEq, "CREATE_EQ", "create an event queue",
       {{0, "log_size", "log2 of the number of EQEs, 1..log_max_eq_sz"},
        {1, "base_hi", "EQ buffer address bits 63:32"},
        {2, "base_lo", "EQ buffer address bits 31:0; the buffer is 4 KiB aligned"},
        {3, "vector", "MSI-X vector, < num_msix"},
        {4, "event_mask", "bit0 completion events, bit1 asynchronous events, bit2 command completions (one EQ each for bits 1 and 2)"}},
       {{0, "eqn", "the new EQ's number"}}},
      {kDestroyEq, "DESTROY_EQ", "destroy an EQ; refused while a CQ reports to it", {{0, "eqn", "EQ number"}}, {}},
      {kQueryEq, "QUERY_EQ", "read an EQ's context", {{0, "eqn", "EQ number"}},
       {{0, "log_size", ""}, {1, "vector", ""}, {2, "producer_index", ""}, {3, "consumer_index", ""},
        {4, "armed", "1 if armed"}, {5, "event_mask", ""}}},
      {kCreateCq, "CREATE_CQ", "create a completion queue",
       {{0, "log_size", "log2 of the number of CQEs, 0..log_max_cq_sz"},
        {1, "base_hi", "CQ buffer address bits 63:32"},
        {2, "base_lo", "CQ buffer address bits 31:0; the buffer is 4 KiB aligned"},
        {3, "dbr_hi", "doorbell record address bits 63:32"},
        {4, "dbr_lo", "doorbell record address bits 31:0; 8-byte aligned"},
        {5, "eqn", "EQ for completion events (must take completion events)"},
        {6, "mod_count", "moderation count, 0..65535 (0: no count threshold)"},
        {7, "mod_period", "moderation period in us, 0..4095 (0: no period)"},
        {8, "flags", "bit0 period mode CQE (else EQE), bit1 overrun ignore, bit2 always armed"}},
       {{0, "cqn", "the new CQ's number (CQN 0 is never used)"}}},
      {kDestroyCq, "DESTROY_CQ", "destroy a CQ", {{0, "cqn", "CQ number"}}, {}},
      {kQueryCq, "QUERY_CQ", "read a CQ's context", {{0, "cqn", "CQ number"}},
       {{0, "log_size", ""}, {1, "producer_index", ""}, {2, "consumer_index", "cached copy"},
        {3, "state", "0 disarmed, 1 armed NEXT, 2 armed SOLICITED, 3 always armed, 4 error"},
        {4, "eqn", ""}, {5, "mod_count", ""}, {6, "mod_period", ""}, {7, "flags", "as CREATE_CQ in[8]"},
        {8, "arm_sn", "arm sequence number the device expects next"}, {9, "last_notified", "producer index at the last event"}}},
      {kModifyCq, "MODIFY_CQ", "change moderation and/or resize a CQ",
       {{0, "cqn", "CQ number"},
        {1, "select", "bit0 moderation (in[2..4]), bit1 resize (in[5..7])"},
        {2, "mod_count", "new moderation count, 0..65535"},
        {3, "mod_period", "new moderation period (us), 0..4095"},
        {4, "flags", "bit0 period mode CQE"},
        {5, "log_size", "resize: log2 of the new size; must hold every outstanding CQE"},
        {6, "base_hi", "resize: new buffer address bits 63:32"},
        {7, "base_lo", "resize: new buffer address bits 31:0, 4 KiB aligned"}},
       {{0, "log_size", "the CQ's log size after the command"}}},
      {kAllocPd, "ALLOC_PD", "allocate a protection domain", {}, {{0, "pdn", "the new PD's number"}}},
      {kDeallocPd, "DEALLOC_PD", "free a protection domain; refused while a QP or MR uses it", {{0, "pdn", "PD number"}}, {}},
      {kRegMr, "REG_MR", "register a memory region",
       {{0, "pdn", "protection domain"},
        {1, "start_hi", "start address bits 63:32"},
        {2, "start_lo", "start address bits 31:0"},
        {3, "length_hi", "length bits 63:32"},
        {4, "length_lo", "length bits 31:0; at least 1, and start + length must not wrap"},
        {5, "access", "bit0 local write, bit1 remote read, bit2 remote write, bit3 remote atomic; remote write or atomic needs local write; bit31: the region lies in host memory at pa (in[6..7]), not at its start address"},
        {6, "pa_hi", "with access bit31: host-memory address of the region's first byte, bits 63:32 (else 0)"},
        {7, "pa_lo", "with access bit31: bits 31:0 (the device's translation of start; else 0)"}},
       {{0, "lkey", "local key"}, {1, "rkey", "remote key (equal to lkey)"}}},
      {kDeregMr, "DEREG_MR", "deregister a memory region", {{0, "lkey", "the MR's key"}}, {}},
      {kCreateQp, "CREATE_QP", "create a queue pair in RESET",
       {{0, "type", "QP type (QP types, docs/formats.md): RC, UD, GSI (QP1), SMI (QP0), UC"},
        {1, "pdn", "protection domain"},
        {2, "send_cqn", "CQ of the send queue (QP0/QP1 share CQs only with each other)"},
        {3, "recv_cqn", "CQ of the receive queue"},
        {4, "log_sq_size", "log2 of the SQ depth in WQEs, 0..15"},
        {5, "log_rq_size", "log2 of the RQ depth in WQEs, 0..15"},
        {6, "sq_base_hi", "SQ ring address bits 63:32"},
        {7, "sq_base_lo", "SQ ring address bits 31:0, 4 KiB aligned"},
        {8, "rq_base_hi", "RQ ring address bits 63:32"},
        {9, "rq_base_lo", "RQ ring address bits 31:0, 4 KiB aligned"},
        {10, "dbr_hi", "QP doorbell record address bits 63:32"},
        {11, "dbr_lo", "QP doorbell record address bits 31:0, 8-byte aligned"},
        {12, "srq", "bit31: the QP takes its receive WQEs from SRQ bits 23:0 (then log_rq_size, rq_base_hi and rq_base_lo must be 0); else 0"}},
       {{0, "qpn", "the new QP's number (SMI: 0, GSI: 1, others from 2)"}}},
      {kModifyQp, "MODIFY_QP", "move a QP through the IB state machine, setting the attributes of the transition",
       {{0, "qpn", "QP number"},
        {1, "cur_state", "the state the caller believes the QP is in (QP states, docs/formats.md)"},
        {2, "new_state", "the target state; the transition must be one the IB state machine allows"},
        {3, "pkey_index", "RESET/INIT->INIT: P_Key index, 0..127"},
        {4, "qkey", "RESET/INIT->INIT and RTS/SQD->RTS (UD, GSI, SMI): Q_Key"},
        {5, "access", "RESET/INIT->INIT and RTS->RTS (RC, UC): bit1 remote read, bit2 remote write, bit3 remote atomic; UC: remote write only"},
        {6, "dest_qpn", "INIT->RTR (RC, UC): destination QPN, 24 bits"},
        {7, "rq_psn", "INIT->RTR (RC, UC): expected receive PSN, 24 bits"},
        {8, "path_mtu", "INIT->RTR (RC, UC): 1..5 = 256..4096 bytes"},
        {9, "min_rnr_timer", "INIT->RTR and RTS->RTS (RC): 0..31"},
        {10, "sq_psn", "RTR->RTS: send PSN, 24 bits"},
        {11, "timers", "RTR->RTS (RC): timeout[4:0] | retry_cnt[10:8] | rnr_retry[14:12]"},
        {12, "rd_atomic", "INIT->RTR (RC): max_dest_rd_atomic[15:8]; RTR->RTS (RC): max_rd_atomic[7:0]; each 0..16"},
        {13, "dlid", "INIT->RTR (RC, UC): the remote port's LID, 16 bits, which a switch routes by; 0: the far end of a point-to-point link or a loopback"}},
       {}},
      {kQueryQp, "QUERY_QP", "read a QP's context", {{0, "qpn", "QP number"}},
       {{0, "state", ""}, {1, "type", ""}, {2, "pdn", ""}, {3, "send_cqn", ""}, {4, "recv_cqn", ""},
        {5, "log_sq_size", ""}, {6, "log_rq_size", ""}, {7, "dest_qpn", ""}, {8, "sq_psn", ""}, {9, "rq_psn", ""},
        {10, "path_mtu", ""}, {11, "access", ""}, {12, "qkey", ""}}},
      {kDestroyQp, "DESTROY_QP", "destroy a QP", {{0, "qpn", "QP number"}}, {}},
      {kCreateSrq, "CREATE_SRQ", "create a shared receive queue: a ring of receive WQEs (RQ WQE format) whose producer counter is the rq_pi field of its doorbell record",
       {{0, "pdn", "protection domain (of its WQEs' buffers)"},
        {1, "log_size", "log2 of the ring's depth in WQEs, 0..15"},
        {2, "base_hi", "ring address bits 63:32"},
        {3, "base_lo", "ring address bits 31:0, 4 KiB aligned"},
        {4, "dbr_hi", "doorbell record address bits 63:32"},
        {5, "dbr_lo", "doorbell record address bits 31:0, 8-byte aligned"},
        {6, "limit", "0: not armed; else arm the SRQ-limit event at this many WQEs, below the depth"}},
       {{0, "srqn", "the new SRQ's number"}}},
      {kDestroySrq, "DESTROY_SRQ", "destroy a shared receive queue; refused while a QP takes WQEs from it", {{0, "srqn", "SRQ number"}}, {}},
      {kQuerySrq, "QUERY_SRQ", "read an SRQ's context", {{0, "srqn", "SRQ number"}},
       {{0, "pdn", ""}, {1, "log_size", ""}, {2, "limit", "the armed limit, 0 if not armed (an event disarms it)"}}},
      {kArmSrq, "ARM_SRQ", "arm (or disarm) the SRQ-limit event: EQE type 0x14, once, when the SRQ holds fewer WQEs than the limit",
       {{0, "srqn", "SRQ number"}, {1, "limit", "0: disarm; else below the depth"}}, {}},
  };
  return all;
}

const CommandSpec* find(uint16_t opcode) {
  for (const auto& c : commands())
    if (c.opcode == opcode) return &c;
  return nullptr;
}

const char* status_name(uint8_t s) {
  static constexpr CodeName names[] = {VHCA_CMD_STATUSES(VHCA_CODE_NAME)};
  return code_name(names, s, "UNKNOWN_STATUS");
}

const char* reason_name(uint8_t r) {
  static constexpr CodeName names[] = {VHCA_CMD_REASONS(VHCA_CODE_NAME)};
  return code_name(names, r, "unspecified");
}

std::string describe_failure(uint32_t syndrome) {
  uint16_t opcode = uint16_t(syndrome >> 16);
  uint8_t dword = uint8_t(syndrome >> 8), reason = uint8_t(syndrome);
  const CommandSpec* spec = find(opcode);
  std::string cmd = spec ? spec->name : fmt::format("opcode {:#x}", opcode);
  if (dword == kFieldNone) return fmt::format("{}: {}", cmd, reason_name(reason));
  if (dword == kFieldOpMod) return fmt::format("{} op_mod: {}", cmd, reason_name(reason));
  const char* field = "reserved";
  if (spec)
    for (const auto& d : spec->inputs)
      if (d.index == dword) field = d.name;
  return fmt::format("{} in[{}] {}: {}", cmd, dword, field, reason_name(reason));
}

}  // namespace vhca::cmd

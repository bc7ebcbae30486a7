#include "model/regs/tables.h"

namespace vhca {

const char* access_name(Access a) {
  switch (a) {
    case Access::ro: return "RO";
    case Access::rw: return "RW";
    case Access::wo: return "WO";
  }
  return "?";
}

const std::vector<RegSpec>& bar0_registers() {
  static const std::vector<RegSpec> regs = {
      {reg::version, 0x0000, 4, 1, 0, kDeviceVersion, Access::ro, "device interface version: major[31:16] minor[15:0]"},
      {reg::caps, 0x0004, 4, 1, 0, kCapResize | kCapModeration | kCapCqePeriodMode | kCapAlwaysArmed, Access::ro,
       "capability summary: bit0 CQ resize, bit1 CQ moderation, bit2 CQE period mode, bit3 always-armed CQs"},
      {reg::health, 0x0008, 4, 1, 0, kHealthReady, Access::ro,
       "bit0 ready (after reset), bit1 initialized (after INIT), bit31 fatal"},
      {reg::reset, 0x000C, 4, 1, 0, 0, Access::wo, "write 1: reset the device; HEALTH.ready returns after the reset time (10 us) or once the CQ writer has cleared its context table and timer wheel (max(CQs, 8192) cycles: 131 us at 65,536 CQs and 500 MHz), whichever is later"},
      {reg::cmdq_addr_hi, 0x0010, 4, 1, 0, 0, Access::rw, "command block address, bits 63:32"},
      {reg::cmdq_addr_lo, 0x0014, 4, 1, 0, 0, Access::rw, "command block address, bits 31:0 (128-byte aligned)"},
      {reg::cmd_doorbell, 0x0018, 4, 1, 0, 0, Access::wo, "write 1: execute the command block at CMDQ_ADDR"},
      {reg::core_clock_khz, 0x001C, 4, 1, 0, 500000, Access::ro, "core clock frequency in kHz"},
      {reg::num_uars, 0x0020, 4, 1, 0, kNumUars, Access::ro, "number of UAR doorbell pages"},
      {reg::num_msix, 0x0024, 4, 1, 0, kNumMsixVectors, Access::ro, "number of MSI-X vectors"},
      {reg::bad_doorbells, 0x0028, 4, 1, 0, 0, Access::ro,
       "count of doorbells ignored as invalid (unknown CQN/EQN, CQ in error, bad index, stale arm)"},
      {reg::last_bad_doorbell, 0x002C, 4, 1, 0, 0, Access::ro,
       "the last invalid doorbell: [31:24] reason (1 unknown object, 2 object in error, 3 index out of range, 4 stale arm sn, 5 FIFO full, 6 QP state), [23:0] CQN/EQN"},
      {reg::bad_accesses, 0x0030, 4, 1, 0, 0, Access::ro, "count of BAR accesses answered with an error (undefined offset, wrong size, read of WO)"},
      {reg::port_lid, 0x0034, 4, 1, 0, 0, Access::ro, "the port's LID (the source LID of UD packets it sends)"},
      {reg::lost_events, 0x0038, 4, 1, 0, 0, Access::ro,
       "count of error reports the device could not deliver: a posted-write failure or an EQ overrun report that found 16 reports already pending, a CQE write failure that found the CQ writer's error input full, a QP, SRQ or port event that found the transport's event queue full"},
      {reg::port_state, 0x003C, 4, 1, 0, 4, Access::ro,
       "the port's state: 4 active (the link is up), 1 down (packets sent are lost); each change raises a port change EQE on the async EQ"},
      {reg::sq_db, kUarBase + 0x00, 8, kNumUars, kUarStride, 0, Access::wo,
       "SQ doorbell (64-bit write): QPN and SQ producer counter, see the SQ / RQ doorbell format"},
      {reg::rq_db, kUarBase + 0x08, 8, kNumUars, kUarStride, 0, Access::wo,
       "RQ doorbell (64-bit write): QPN and RQ producer counter (optional: the doorbell record suffices)"},
      {reg::cq_arm_db, kUarBase + 0x20, 8, kNumUars, kUarStride, 0, Access::wo,
       "CQ arm doorbell (64-bit write): see the arm doorbell format"},
      {reg::eq_db_arm, kUarBase + 0x40, 4, kNumUars, kUarStride, 0, Access::wo,
       "EQ doorbell: update the consumer index and re-arm"},
      {reg::eq_db_noarm, kUarBase + 0x48, 4, kNumUars, kUarStride, 0, Access::wo,
       "EQ doorbell: update the consumer index without re-arming"},
      {reg::sq_bf, kUarBase + 0x100, sqwqe::kSize, kNumUars, kUarStride, 0, Access::wo,
       "SQ BlueFlame (one write-combined write of a whole send WQE): the WQE and its doorbell in one; the device takes it without a fetch when it is the next WQE of its QP and the QP's descriptor cache has room, else reads the ring as for UAR_SQ_DB (the driver writes the ring and the doorbell record first)"},
      {reg::msix_addr_lo, kMsixTableBase + 0x0, 4, kNumMsixVectors, kMsixEntryStride, 0, Access::rw, "MSI-X vector: message address bits 31:0"},
      {reg::msix_addr_hi, kMsixTableBase + 0x4, 4, kNumMsixVectors, kMsixEntryStride, 0, Access::rw, "MSI-X vector: message address bits 63:32"},
      {reg::msix_data, kMsixTableBase + 0x8, 4, kNumMsixVectors, kMsixEntryStride, 0, Access::rw, "MSI-X vector: message data"},
      {reg::msix_ctrl, kMsixTableBase + 0xC, 4, kNumMsixVectors, kMsixEntryStride, 1, Access::rw,
       "MSI-X vector control: bit0 mask (1 at reset); unmasking delivers a pending message"},
      {reg::msix_pba, kMsixPbaBase, 4, kNumMsixVectors / 32, 4, 0, Access::ro, "MSI-X pending bits, one per vector"},
  };
  return regs;
}

#define VHCA_FIELD_SPEC(n, b, s, l, w, d) {#n, Field{b, s, l, w}, d},
const std::vector<FormatSpec>& formats() {
  static const std::vector<FormatSpec> all = {
      {"CQE", "CQE", cqe::kSize, {VHCA_CQE_FIELDS(VHCA_FIELD_SPEC)}},
      {"EQE", "EQE", eqe::kSize, {VHCA_EQE_FIELDS(VHCA_FIELD_SPEC)}},
      {"CQ doorbell record", "DBR", dbr::kSize, {VHCA_DBR_FIELDS(VHCA_FIELD_SPEC)}},
      {"CQ arm doorbell (MMIO, 64-bit little-endian value)", "ARMDB", 8, {VHCA_ARM_DB_FIELDS(VHCA_FIELD_SPEC)}},
      {"EQ doorbell (MMIO, 32-bit little-endian value)", "EQDB", 4, {VHCA_EQ_DB_FIELDS(VHCA_FIELD_SPEC)}},
      {"Command block", "CMD", cmdblk::kSize, {VHCA_CMD_FIELDS(VHCA_FIELD_SPEC)}},
      {"Send WQE", "SQWQE", sqwqe::kSize, {VHCA_SQ_WQE_FIELDS(VHCA_FIELD_SPEC)}},
      {"Receive WQE", "RQWQE", rqwqe::kSize, {VHCA_RQ_WQE_FIELDS(VHCA_FIELD_SPEC)}},
      {"Scatter/gather entry", "SGE", sge::kSize, {VHCA_SGE_FIELDS(VHCA_FIELD_SPEC)}},
      {"QP doorbell record", "QPDBR", qpdbr::kSize, {VHCA_QP_DBR_FIELDS(VHCA_FIELD_SPEC)}},
      {"SQ / RQ doorbell (MMIO, 64-bit little-endian value)", "WQDB", 8, {VHCA_WQ_DB_FIELDS(VHCA_FIELD_SPEC)}},
  };
  return all;
}
#undef VHCA_FIELD_SPEC

}  // namespace vhca

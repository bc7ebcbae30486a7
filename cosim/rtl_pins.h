// The Verilated CQ writer's pins (rtl/cq_writer_pipelined.v, at each size a class of its own):
// driving the inputs from the engine's streams, and reading a CQE write back. Templates over the
// Verilated class.
#pragma once
#include <cstdint>

#include "model/cq/cq_writer_engine.h"
#include "model/regs/tables.h"

namespace vhca {

// One clock edge with rst high, then clk low: the state every run starts from.
template <typename V>
void pulse_reset(V& t) {
  t.rst = 1;
  t.clk = 0;
  t.eval();
  t.clk = 1;
  t.eval();
  t.rst = 0;
  t.clk = 0;
  t.eval();
}

// The s_* ports from the heads of the engine's input streams visible on `cycle`.
template <typename V>
void drive_input_pins(V& t, CqWriterEngine& e, uint64_t cycle) {
  t.cfg_arm_at_once = e.config().arm_event == ArmEvent::at_once;
  t.s_ctl_valid = e.s_ctl.ready(cycle);
  if (t.s_ctl_valid) {
    const CqControl& c = e.s_ctl.front();
    t.s_ctl_op = uint8_t(c.op);
    t.s_ctl_cqn = c.cqn;
    t.s_ctl_log_size = c.cfg.log_size;
    t.s_ctl_base = c.cfg.base;
    t.s_ctl_dbr = c.cfg.dbr;
    t.s_ctl_eqn = c.cfg.eqn;
    t.s_ctl_mod_count = c.cfg.mod_count;
    t.s_ctl_mod_period = c.cfg.mod_period;
    t.s_ctl_period_mode = c.cfg.period_mode == PeriodMode::cqe;
    t.s_ctl_overrun_ignore = c.cfg.overrun_ignore;
    t.s_ctl_always_armed = c.cfg.always_armed;
  }
  t.s_aerr_valid = e.s_access_error.ready(cycle);
  if (t.s_aerr_valid) t.s_aerr_cqn = e.s_access_error.front();
  t.s_ci_valid = e.s_ci.ready(cycle);
  if (t.s_ci_valid) {
    t.s_ci_cqn = e.s_ci.front().cqn;
    t.s_ci_ci = e.s_ci.front().ci & 0xFFFFFF;
    t.s_ci_ok = e.s_ci.front().ok;
  }
  t.s_arm_valid = e.s_arm.ready(cycle);
  if (t.s_arm_valid) {
    const ArmRequest& a = e.s_arm.front();
    t.s_arm_cqn = a.cqn;
    t.s_arm_sn = a.sn;
    t.s_arm_cmd = a.cmd == ArmCmd::solicited;
    t.s_arm_ci = a.ci & 0xFFFFFF;
  }
  t.s_cpl_valid = e.s_cpl.ready(cycle);
  if (t.s_cpl_valid) {
    const CompletionRecord& r = e.s_cpl.front();
    t.s_cpl_cqn = r.cqn;
    t.s_cpl_is_send = r.is_send;
    t.s_cpl_opcode = r.opcode;
    t.s_cpl_send_opcode = r.send_opcode;
    t.s_cpl_syndrome = r.syndrome;
    t.s_cpl_vendor_syndrome = r.vendor_syndrome;
    t.s_cpl_wr_id = r.wr_id;
    t.s_cpl_byte_cnt = r.byte_cnt;
    t.s_cpl_imm_present = r.imm_present;
    t.s_cpl_imm = r.imm;
    t.s_cpl_qpn = r.qpn;
    t.s_cpl_src_qpn = r.src_qpn;
    t.s_cpl_slid = r.slid;
    t.s_cpl_sl = r.sl;
    t.s_cpl_grh = r.grh;
    t.s_cpl_pkey_index = r.pkey_index;
    t.s_cpl_se = r.se;
    t.s_cpl_wqe_counter = r.wqe_counter;
  }
}

// The CQE write on the m_dma pins (byte 0 in data[511:504]).
template <typename V>
DmaWrite cqe_write_on_pins(const V& t) {
  DmaWrite w;
  w.addr = t.m_dma_addr;
  w.len = cqe::kSize;
  w.source = DmaSource::cqe;
  w.id = t.m_dma_cqn;
  for (unsigned i = 0; i < 64; ++i) {
    const unsigned lo = 504 - 8 * i;
    w.data[i] = uint8_t(t.m_dma_data[lo / 32] >> (lo % 32));
  }
  return w;
}

}  // namespace vhca

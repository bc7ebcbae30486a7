// cq_writer: the CQ writer of the vhca HCA in synthesizable Verilog-2005 (Verilator and Icarus).
//
// The cycle-exact twin of the C++ model model/cq/cq_writer_core.cpp; the contract both meet is
// docs/timing.md ("CQ writer"). One action per cycle, chosen in fixed priority among the inputs
// that are valid: control, CQE-write failure, consumer-index response, the earliest expired
// moderation timer (ties: lowest CQN), arm, completion. Every action touches one CQ context.
//
// Parameters
//   NUM_CQS        CQ context entries (>= 2). CQNs at or above it do not exist.
//   CYCLES_PER_US  core clock cycles per microsecond (moderation periods are in microseconds).
//
// Interface conventions
//   s_* inputs are valid/ready: an item is taken on a rising edge where valid && ready. ready is
//   combinational from the state, the other inputs and the m_*_ready credits.
//   m_* outputs are one-cycle pulses, valid in the cycle the action happens (combinational); the
//   writer acts only when all three m_*_ready credits are high, so an output is never refused.
//   i_cycle is the current core-clock cycle (time base): CQE timestamps and timer deadlines use it,
//   which lets the environment skip idle cycles without clocking them.
//   o_cov reports what the action did (coverage and statistics), one bit per kind (see COV_*).
//   q_* is a combinational read port of one CQ context, for firmware queries.
`include "vhca_formats.vh"

module cq_writer #(
    parameter integer NUM_CQS = 16,
    parameter integer CYCLES_PER_US = 500
) (
    input  wire         clk,
    input  wire         rst,
    input  wire [63:0]  i_cycle,
    // Static configuration: 1 raises the event owed at an arm (CQEs newer than its index) at once,
    // ungated (the rule before S26, kept for comparison); 0 hands those CQEs to moderation.
    input  wire         cfg_arm_at_once,

    // s_ctl: control operations from the command unit
    input  wire         s_ctl_valid,
    output reg          s_ctl_ready,
    input  wire [2:0]   s_ctl_op,            // 0 create 1 modify moderation 2 resize begin 3 resize commit 4 resize abort 5 destroy
    input  wire [23:0]  s_ctl_cqn,
    input  wire [4:0]   s_ctl_log_size,
    input  wire [63:0]  s_ctl_base,
    input  wire [63:0]  s_ctl_dbr,
    input  wire [23:0]  s_ctl_eqn,
    input  wire [15:0]  s_ctl_mod_count,
    input  wire [11:0]  s_ctl_mod_period,
    input  wire         s_ctl_period_mode,   // 0 EQE 1 CQE
    input  wire         s_ctl_overrun_ignore,
    input  wire         s_ctl_always_armed,

    // s_aerr: a CQE write of this CQ failed at the host
    input  wire         s_aerr_valid,
    output reg          s_aerr_ready,
    input  wire [23:0]  s_aerr_cqn,

    // s_ci: consumer-index refresh response (doorbell record word 0)
    input  wire         s_ci_valid,
    output reg          s_ci_ready,
    input  wire [23:0]  s_ci_cqn,
    input  wire [23:0]  s_ci_ci,
    input  wire         s_ci_ok,

    // s_arm: CQ arm doorbells
    input  wire         s_arm_valid,
    output reg          s_arm_ready,
    input  wire [23:0]  s_arm_cqn,
    input  wire [1:0]   s_arm_sn,
    input  wire         s_arm_cmd,           // 0 NEXT 1 SOLICITED
    input  wire [23:0]  s_arm_ci,

    // s_cpl: completion records
    input  wire         s_cpl_valid,
    output reg          s_cpl_ready,
    input  wire [23:0]  s_cpl_cqn,
    input  wire         s_cpl_is_send,
    input  wire [3:0]   s_cpl_opcode,
    input  wire [7:0]   s_cpl_send_opcode,
    input  wire [7:0]   s_cpl_syndrome,
    input  wire [7:0]   s_cpl_vendor_syndrome,
    input  wire [63:0]  s_cpl_wr_id,
    input  wire [31:0]  s_cpl_byte_cnt,
    input  wire         s_cpl_imm_present,
    input  wire [31:0]  s_cpl_imm,
    input  wire [23:0]  s_cpl_qpn,
    input  wire [23:0]  s_cpl_src_qpn,
    input  wire [15:0]  s_cpl_slid,
    input  wire [3:0]   s_cpl_sl,
    input  wire         s_cpl_grh,
    input  wire [15:0]  s_cpl_pkey_index,
    input  wire         s_cpl_se,
    input  wire [15:0]  s_cpl_wqe_counter,

    // m_dma: CQE writes (64 bytes, byte 0 in data[511:504])
    input  wire         m_dma_ready,
    output reg          m_dma_valid,
    output reg  [63:0]  m_dma_addr,
    output reg  [511:0] m_dma_data,
    output reg  [23:0]  m_dma_cqn,

    // m_event: completion events and CQ errors for the EQ engine
    input  wire         m_event_ready,
    output reg          m_event_valid,
    output reg  [7:0]   m_event_type,        // 0x00 completion, 0x04 CQ error
    output reg  [23:0]  m_event_eqn,
    output reg  [23:0]  m_event_cqn,
    output reg  [7:0]   m_event_syndrome,
    output reg  [63:0]  m_event_data,        // producer index

    // m_ci_req: doorbell-record reads
    input  wire         m_ci_req_ready,
    output reg          m_ci_req_valid,
    output reg  [23:0]  m_ci_req_cqn,
    output reg  [63:0]  m_ci_req_dbr,

    // side band
    output reg          o_ctl_done,
    output reg          o_bad_db_valid,
    output reg  [7:0]   o_bad_db_reason,     // 1 unknown CQ, 2 CQ in error, 3 index out of range, 4 stale sn
    output reg  [23:0]  o_bad_db_cqn,
    output reg  [16:0]  o_cov,
    output reg  [63:0]  o_next_deadline,     // earliest running timer, all ones if none
    output wire         o_waiting_ci,
    output wire         o_resizing,

    // context read port
    input  wire [23:0]  q_cqn,
    output reg          q_valid,
    output reg  [2:0]   q_state,
    output reg  [4:0]   q_log_size,
    output reg  [63:0]  q_base,
    output reg  [63:0]  q_dbr,
    output reg  [23:0]  q_eqn,
    output reg  [15:0]  q_mod_count,
    output reg  [11:0]  q_mod_period,
    output reg  [2:0]   q_flags,             // {always_armed, overrun_ignore, period_mode}
    output reg  [23:0]  q_pi,
    output reg  [23:0]  q_ci,
    output reg  [1:0]   q_arm_sn,
    output reg  [23:0]  q_last_notified,
    output reg  [15:0]  q_pending,           // qualifying CQEs since the last event
    output reg  [63:0]  q_deadline           // moderation timer deadline, 0 if none running
);
  localparam integer CQN_W = (NUM_CQS > 1) ? $clog2(NUM_CQS) : 1;
  localparam [31:0]  NUM_CQS_32 = NUM_CQS;
  localparam [23:0]  NUM_CQS_24 = NUM_CQS_32[23:0];

  // CQ states
  // The contract's codes (CQ states, control ops, EQE types and syndromes, CQE opcodes, doorbell
  // refusal reasons), generated from model/regs/codes.h: not every one is used here.
  /* verilator lint_off UNUSEDPARAM */
`include "vhca_codes.vh"
  /* verilator lint_on UNUSEDPARAM */
  // actions
  localparam [2:0] A_NONE = 3'd0, A_CTL = 3'd1, A_AERR = 3'd2, A_CI = 3'd3, A_TIMER = 3'd4, A_ARM = 3'd5, A_CPL = 3'd6;
  // coverage bits
  localparam integer COV_CQE = 0, COV_EVENT = 1, COV_BY_COUNT = 2, COV_BY_PERIOD = 3, COV_IMMEDIATE = 4,
                     COV_AT_ARM = 5, COV_ARM = 6, COV_ARM_UPGRADED = 7, COV_ARM_IGNORED = 8, COV_ARM_STALE = 9,
                     COV_CI_REFRESH = 10, COV_OVERFLOW = 11, COV_OWNER_WRAP = 12, COV_DROPPED = 13,
                     COV_BAD_RECORD = 14, COV_TIMER_EXPIRY = 15, COV_ARM_OWED = 16;

  // CQ context table
  reg         t_valid        [0:NUM_CQS-1];
  reg  [2:0]  t_state        [0:NUM_CQS-1];
  reg  [4:0]  t_log_size     [0:NUM_CQS-1];
  reg  [63:0] t_base         [0:NUM_CQS-1];
  reg  [63:0] t_dbr          [0:NUM_CQS-1];
  reg  [23:0] t_eqn          [0:NUM_CQS-1];
  reg  [15:0] t_mod_count    [0:NUM_CQS-1];
  reg  [11:0] t_mod_period   [0:NUM_CQS-1];
  reg         t_period_mode  [0:NUM_CQS-1];
  reg         t_oi           [0:NUM_CQS-1];
  reg         t_always       [0:NUM_CQS-1];
  reg  [23:0] t_pi           [0:NUM_CQS-1];
  reg  [23:0] t_ci           [0:NUM_CQS-1];
  reg  [23:0] t_last_notified[0:NUM_CQS-1];
  reg  [23:0] t_last_sol     [0:NUM_CQS-1];
  reg         t_any_sol      [0:NUM_CQS-1];
  reg  [1:0]  t_arm_sn       [0:NUM_CQS-1];
  reg  [15:0] t_pending      [0:NUM_CQS-1];
  reg  [63:0] t_timer_start  [0:NUM_CQS-1];
  reg  [63:0] t_deadline     [0:NUM_CQS-1];   // 0: no timer running

  reg        waiting_ci;   // the head completion waits for a consumer-index response
  reg        refreshed;    // the consumer index was just refreshed for the head completion
  reg  [7:0] resizing;     // CQs in resize: completion intake is held

  assign o_waiting_ci = waiting_ci;
  assign o_resizing = resizing != 8'd0;

  // ---------------------------------------------------------------- timers
  reg             tm_hit;
  reg [CQN_W-1:0] tm_idx;
  reg [63:0]      tm_best;
  integer         k;
  always @(*) begin
    tm_hit = 1'b0;
    tm_idx = {CQN_W{1'b0}};
    tm_best = {64{1'b1}};
    o_next_deadline = {64{1'b1}};
    for (k = 0; k < NUM_CQS; k = k + 1) begin
      if (t_valid[k] && t_deadline[k] != 64'd0) begin
        if (t_deadline[k] < o_next_deadline) o_next_deadline = t_deadline[k];
        if (t_deadline[k] <= i_cycle && (!tm_hit || t_deadline[k] < tm_best)) begin
          tm_hit = 1'b1;
          tm_idx = k[CQN_W-1:0];
          tm_best = t_deadline[k];
        end
      end
    end
  end

  // ---------------------------------------------------------------- query port
  wire             q_in = q_cqn < NUM_CQS_24;
  wire [CQN_W-1:0] qi = q_cqn[CQN_W-1:0];
  always @(*) begin
    q_valid = q_in && t_valid[qi];
    q_state = t_state[qi];
    q_log_size = t_log_size[qi];
    q_base = t_base[qi];
    q_dbr = t_dbr[qi];
    q_eqn = t_eqn[qi];
    q_mod_count = t_mod_count[qi];
    q_mod_period = t_mod_period[qi];
    q_flags = {t_always[qi], t_oi[qi], t_period_mode[qi]};
    q_pi = t_pi[qi];
    q_ci = t_ci[qi];
    q_arm_sn = t_arm_sn[qi];
    q_last_notified = t_last_notified[qi];
    q_pending = t_pending[qi];
    q_deadline = t_deadline[qi];
  end

  // ---------------------------------------------------------------- action select
  wire act_en = m_dma_ready && m_event_ready && m_ci_req_ready;
  reg  [2:0]       kind;
  reg  [23:0]      sel_cqn;
  always @(*) begin
    kind = A_NONE;
    sel_cqn = 24'd0;
    if (act_en) begin
      if (s_ctl_valid) begin kind = A_CTL; sel_cqn = s_ctl_cqn; end
      else if (s_aerr_valid) begin kind = A_AERR; sel_cqn = s_aerr_cqn; end
      else if (s_ci_valid) begin kind = A_CI; sel_cqn = s_ci_cqn; end
      else if (tm_hit) begin kind = A_TIMER; sel_cqn = {{(24-CQN_W){1'b0}}, tm_idx}; end
      else if (s_arm_valid) begin kind = A_ARM; sel_cqn = s_arm_cqn; end
      else if (s_cpl_valid && !waiting_ci && resizing == 8'd0) begin kind = A_CPL; sel_cqn = s_cpl_cqn; end
    end
  end
  wire             sel_in = sel_cqn < NUM_CQS_24;
  wire [CQN_W-1:0] si = sel_cqn[CQN_W-1:0];

  // ---------------------------------------------------------------- next state of the selected CQ
  reg         n_valid, n_period_mode, n_oi, n_always, n_any_sol;
  reg  [2:0]  n_state;
  reg  [4:0]  n_log_size;
  reg  [63:0] n_base, n_dbr, n_timer_start, n_deadline;
  reg  [23:0] n_eqn, n_pi, n_ci, n_last_notified, n_last_sol;
  reg  [15:0] n_mod_count, n_pending;
  reg  [11:0] n_mod_period;
  reg  [1:0]  n_arm_sn;
  reg         n_waiting_ci, n_refreshed;
  reg  [7:0]  n_resizing;
  reg         we;

  // Scratch of the combinational evaluation.
  reg         do_cpl, use_refresh, do_moderate, do_reeval, do_fire, do_err, armed_now, qual, nomod, sol;
  reg  [7:0]  err_syn;
  reg  [24:0] size;
  reg  [23:0] newer, dsol, mask24;
  reg  [63:0] period_cycles, dl;
  reg  [511:0] cqe;

  always @(*) begin
    n_valid = t_valid[si];            n_state = t_state[si];           n_log_size = t_log_size[si];
    n_base = t_base[si];              n_dbr = t_dbr[si];               n_eqn = t_eqn[si];
    n_mod_count = t_mod_count[si];    n_mod_period = t_mod_period[si]; n_period_mode = t_period_mode[si];
    n_oi = t_oi[si];                  n_always = t_always[si];         n_pi = t_pi[si];
    n_ci = t_ci[si];                  n_last_notified = t_last_notified[si];
    n_last_sol = t_last_sol[si];      n_any_sol = t_any_sol[si];       n_arm_sn = t_arm_sn[si];
    n_pending = t_pending[si];        n_timer_start = t_timer_start[si];
    n_deadline = t_deadline[si];
    if (!sel_in) n_valid = 1'b0;
    n_waiting_ci = waiting_ci;
    n_refreshed = refreshed;
    n_resizing = resizing;
    we = 1'b0;
    s_ctl_ready = 1'b0; s_aerr_ready = 1'b0; s_ci_ready = 1'b0; s_arm_ready = 1'b0; s_cpl_ready = 1'b0;
    m_dma_valid = 1'b0; m_dma_addr = 64'd0; m_dma_data = 512'd0; m_dma_cqn = 24'd0;
    m_event_valid = 1'b0; m_event_type = 8'd0; m_event_eqn = 24'd0; m_event_cqn = 24'd0;
    m_event_syndrome = 8'd0; m_event_data = 64'd0;
    m_ci_req_valid = 1'b0; m_ci_req_cqn = 24'd0; m_ci_req_dbr = 64'd0;
    o_ctl_done = 1'b0; o_bad_db_valid = 1'b0; o_bad_db_reason = 8'd0; o_bad_db_cqn = 24'd0;
    o_cov = 17'd0;
    do_cpl = 1'b0; use_refresh = 1'b0; do_moderate = 1'b0; do_reeval = 1'b0; do_fire = 1'b0; do_err = 1'b0;
    err_syn = 8'd0; qual = 1'b0; nomod = 1'b0; newer = 24'd0; dsol = 24'd0; dl = 64'd0; cqe = 512'd0;
    sol = (s_cpl_syndrome != 8'd0) || (!s_cpl_is_send && s_cpl_se);
    size = 25'd1 << n_log_size;
    mask24 = size[23:0] - 24'd1;
    period_cycles = {52'd0, n_mod_period} * CYCLES_PER_US;

    case (kind)
      A_CTL: begin
        s_ctl_ready = 1'b1;
        o_ctl_done = 1'b1;
        if (sel_in) begin
          we = 1'b1;
          case (s_ctl_op)
            CQ_CTL_CREATE: begin
              n_valid = 1'b1; n_log_size = s_ctl_log_size; n_base = s_ctl_base; n_dbr = s_ctl_dbr;
              n_eqn = s_ctl_eqn; n_mod_count = s_ctl_mod_count; n_mod_period = s_ctl_mod_period;
              n_period_mode = s_ctl_period_mode; n_oi = s_ctl_overrun_ignore; n_always = s_ctl_always_armed;
              n_state = s_ctl_always_armed ? CQ_STATE_ALWAYS_ARMED : CQ_STATE_DISARMED;
              n_pi = 24'd0; n_ci = 24'd0; n_last_notified = 24'd0; n_last_sol = 24'd0; n_any_sol = 1'b0;
              n_arm_sn = 2'd0; n_pending = 16'd0; n_timer_start = i_cycle; n_deadline = 64'd0;
            end
            CQ_CTL_MODIFY_MODERATION: begin
              n_mod_count = s_ctl_mod_count; n_mod_period = s_ctl_mod_period; n_period_mode = s_ctl_period_mode;
              n_deadline = 64'd0; n_timer_start = i_cycle;
              period_cycles = {52'd0, n_mod_period} * CYCLES_PER_US;
              do_reeval = 1'b1;
            end
            CQ_CTL_RESIZE_BEGIN: n_resizing = resizing + 8'd1;
            CQ_CTL_RESIZE_COMMIT: begin
              n_log_size = s_ctl_log_size; n_base = s_ctl_base;
              if (resizing != 8'd0) n_resizing = resizing - 8'd1;
            end
            CQ_CTL_RESIZE_ABORT: if (resizing != 8'd0) n_resizing = resizing - 8'd1;
            CQ_CTL_DESTROY: begin n_deadline = 64'd0; n_valid = 1'b0; end
            default: ;
          endcase
          size = 25'd1 << n_log_size;
          mask24 = size[23:0] - 24'd1;
        end
      end

      A_AERR: begin
        s_aerr_ready = 1'b1;
        if (n_valid && n_state != CQ_STATE_ERROR) begin
          we = 1'b1; do_err = 1'b1; err_syn = CQ_ERROR_CQ_ACCESS_VIOLATION;
        end
      end

      A_CI: begin
        s_ci_ready = 1'b1;
        if (waiting_ci && s_cpl_valid && s_cpl_cqn == s_ci_cqn && sel_in) begin
          n_waiting_ci = 1'b0;
          if (n_valid) begin
            we = 1'b1;
            if (!s_ci_ok) begin
              do_err = 1'b1; err_syn = CQ_ERROR_CQ_ACCESS_VIOLATION; o_cov[COV_DROPPED] = 1'b1; s_cpl_ready = 1'b1;
            end else if ({1'b0, n_pi - s_ci_ci} > size) begin
              do_err = 1'b1; err_syn = CQ_ERROR_CQ_BAD_DOORBELL_RECORD; o_cov[COV_DROPPED] = 1'b1; s_cpl_ready = 1'b1;
            end else begin
              n_ci = s_ci_ci;
              n_refreshed = 1'b1;
              if (resizing == 8'd0) begin do_cpl = 1'b1; use_refresh = 1'b1; end
            end
          end
        end
      end

      A_TIMER: begin
        we = 1'b1;
        n_deadline = 64'd0;
        o_cov[COV_TIMER_EXPIRY] = 1'b1;
        armed_now = n_state == CQ_STATE_ARMED_NEXT || n_state == CQ_STATE_ARMED_SOLICITED || n_state == CQ_STATE_ALWAYS_ARMED;
        if (armed_now && n_pending != 16'd0) begin
          o_cov[COV_BY_PERIOD] = 1'b1; do_fire = 1'b1;
        end
      end

      A_ARM: begin
        s_arm_ready = 1'b1;
        o_cov[COV_ARM] = 1'b1;
        if (!n_valid) begin
          o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_UNKNOWN_OBJECT; o_bad_db_cqn = s_arm_cqn;
        end else if (n_state == CQ_STATE_ERROR) begin
          o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_OBJECT_IN_ERROR; o_bad_db_cqn = s_arm_cqn;
        end else if ({1'b0, n_pi - s_arm_ci} > size) begin
          o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_INDEX_OUT_OF_RANGE; o_bad_db_cqn = s_arm_cqn;
        end else if (s_arm_sn != n_arm_sn) begin
          o_cov[COV_ARM_STALE] = 1'b1;
          o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_STALE_ARM_SN; o_bad_db_cqn = s_arm_cqn;
        end else if (n_state == CQ_STATE_ARMED_NEXT || n_state == CQ_STATE_ALWAYS_ARMED ||
                     (n_state == CQ_STATE_ARMED_SOLICITED && s_arm_cmd)) begin
          o_cov[COV_ARM_IGNORED] = 1'b1;           // S10: a pending request absorbs the new one
        end else begin
          we = 1'b1;
          if (n_state == CQ_STATE_ARMED_SOLICITED) begin
            n_state = CQ_STATE_ARMED_NEXT;               // S11: NEXT takes precedence
            o_cov[COV_ARM_UPGRADED] = 1'b1;
          end else begin
            n_state = s_arm_cmd ? CQ_STATE_ARMED_SOLICITED : CQ_STATE_ARMED_NEXT;
            n_pending = 16'd0;
          end
          newer = n_pi - s_arm_ci;
          dsol = n_last_sol - s_arm_ci;
          if (n_state == CQ_STATE_ARMED_NEXT ? (newer != 24'd0)
                                       : (n_any_sol && dsol != 24'd0 && dsol <= newer)) begin
            if (cfg_arm_at_once) begin
              o_cov[COV_AT_ARM] = 1'b1; do_fire = 1'b1;  // S9: no lost wake-up
            end else begin                               // S26: the owed CQEs go to moderation
              o_cov[COV_ARM_OWED] = 1'b1; do_reeval = 1'b1;
              if (n_state != CQ_STATE_ARMED_NEXT) n_pending = 16'd1;
              else if (newer[23:16] != 8'd0) n_pending = 16'hFFFF;
              else n_pending = newer[15:0];
            end
          end
        end
      end

      A_CPL: begin
        do_cpl = 1'b1;
        use_refresh = refreshed;
      end

      default: ;
    endcase

    // -------------------------------------------------------------- completion
    if (do_cpl) begin
      n_refreshed = 1'b0;
      if (!n_valid) begin
        o_cov[COV_BAD_RECORD] = 1'b1; s_cpl_ready = 1'b1;
      end else if (n_state == CQ_STATE_ERROR) begin
        we = 1'b1; o_cov[COV_DROPPED] = 1'b1; s_cpl_ready = 1'b1;
      end else if (!n_oi && {1'b0, n_pi - n_ci} >= size) begin
        we = 1'b1;
        if (!use_refresh) begin                    // cached index says full: read the doorbell record
          m_ci_req_valid = 1'b1; m_ci_req_cqn = s_cpl_cqn; m_ci_req_dbr = n_dbr;
          n_waiting_ci = 1'b1; o_cov[COV_CI_REFRESH] = 1'b1;
        end else begin                             // S14 overflow: not written
          o_cov[COV_OVERFLOW] = 1'b1; o_cov[COV_DROPPED] = 1'b1;
          do_err = 1'b1; err_syn = CQ_ERROR_CQ_OVERRUN; s_cpl_ready = 1'b1;
        end
      end else begin
        we = 1'b1;
        s_cpl_ready = 1'b1;
        cqe[`CQE_WR_ID_LO +: `CQE_WR_ID_W] = s_cpl_wr_id;
        cqe[`CQE_TIMESTAMP_LO +: `CQE_TIMESTAMP_W] = i_cycle;
        cqe[`CQE_QPN_LO +: `CQE_QPN_W] = s_cpl_qpn;
        cqe[`CQE_WQE_COUNTER_LO +: `CQE_WQE_COUNTER_W] = s_cpl_wqe_counter;
        if (s_cpl_syndrome != 8'd0) begin
          cqe[`CQE_SYNDROME_LO +: `CQE_SYNDROME_W] = s_cpl_syndrome;
          cqe[`CQE_VENDOR_SYNDROME_LO +: `CQE_VENDOR_SYNDROME_W] = s_cpl_vendor_syndrome;
          cqe[`CQE_OPCODE_LO +: `CQE_OPCODE_W] = s_cpl_is_send ? CQE_OP_REQ_ERR : CQE_OP_RESP_ERR;
        end else begin
          cqe[`CQE_OPCODE_LO +: `CQE_OPCODE_W] = s_cpl_opcode;
          cqe[`CQE_BYTE_CNT_LO +: `CQE_BYTE_CNT_W] = s_cpl_byte_cnt;
          cqe[`CQE_IMM_PRESENT_LO +: `CQE_IMM_PRESENT_W] = s_cpl_imm_present;
          cqe[`CQE_IMM_LO +: `CQE_IMM_W] = s_cpl_imm;
          if (s_cpl_is_send) begin
            cqe[`CQE_SEND_OPCODE_LO +: `CQE_SEND_OPCODE_W] = s_cpl_send_opcode;
          end else begin
            cqe[`CQE_SRC_QPN_LO +: `CQE_SRC_QPN_W] = s_cpl_src_qpn;
            cqe[`CQE_SLID_LO +: `CQE_SLID_W] = s_cpl_slid;
            cqe[`CQE_SL_LO +: `CQE_SL_W] = s_cpl_sl;
            cqe[`CQE_GRH_LO +: `CQE_GRH_W] = s_cpl_grh;
            cqe[`CQE_PKEY_INDEX_LO +: `CQE_PKEY_INDEX_W] = s_cpl_pkey_index;
            cqe[`CQE_SE_LO +: `CQE_SE_W] = s_cpl_se;
          end
        end
        cqe[`CQE_OWNER_LO +: `CQE_OWNER_W] = (({1'b0, n_pi} >> n_log_size) & 25'd1) != 25'd0;
        m_dma_valid = 1'b1;
        m_dma_addr = n_base + {34'd0, n_pi & mask24, 6'd0};
        m_dma_data = cqe;
        m_dma_cqn = s_cpl_cqn;
        o_cov[COV_CQE] = 1'b1;
        n_pi = n_pi + 24'd1;
        if ((n_pi & mask24) == 24'd0) o_cov[COV_OWNER_WRAP] = 1'b1;
        if (sol) begin
          n_last_sol = n_pi; n_any_sol = 1'b1;
        end else if (n_any_sol && {1'b0, n_pi - n_last_sol} > size) begin
          n_any_sol = 1'b0;                        // consumed long ago: must not alias after a wrap
        end
        do_moderate = 1'b1;
      end
    end

    // -------------------------------------------------------------- moderation (S12)
    armed_now = n_state == CQ_STATE_ARMED_NEXT || n_state == CQ_STATE_ARMED_SOLICITED || n_state == CQ_STATE_ALWAYS_ARMED;
    if (do_moderate) begin
      qual = (n_state == CQ_STATE_ARMED_SOLICITED) ? sol : armed_now;
      // CQE mode: every CQE restarts the period (only counted ones when arms fire at once)
      if (n_period_mode && (qual || !cfg_arm_at_once)) n_timer_start = i_cycle;
      if (qual && n_pending != 16'hFFFF) n_pending = n_pending + 16'd1;
      do_reeval = 1'b1;
    end
    if (do_reeval && armed_now && n_pending != 16'd0) begin
      nomod = n_mod_count == 16'd0 && n_mod_period == 12'd0;
      if (nomod) begin
        o_cov[COV_IMMEDIATE] = 1'b1; do_fire = 1'b1;
      end else if (n_mod_count != 16'd0 && n_pending >= n_mod_count) begin
        o_cov[COV_BY_COUNT] = 1'b1; do_fire = 1'b1;
      end else if (n_mod_period != 12'd0) begin
        dl = n_timer_start + period_cycles;      // EQE mode: from the last event; CQE mode: the last CQE
        if (dl <= i_cycle) begin
          o_cov[COV_BY_PERIOD] = 1'b1; do_fire = 1'b1;
        end else begin
          n_deadline = dl;
        end
      end
    end

    // -------------------------------------------------------------- fire / error
    if (do_fire) begin
      m_event_valid = 1'b1; m_event_type = EQE_TYPE_COMPLETION; m_event_eqn = n_eqn; m_event_cqn = sel_cqn;
      m_event_data = {40'd0, n_pi};
      o_cov[COV_EVENT] = 1'b1;
      if (n_state != CQ_STATE_ALWAYS_ARMED) n_state = CQ_STATE_DISARMED;
      n_pending = 16'd0;
      n_last_notified = n_pi;
      n_timer_start = i_cycle;
      n_arm_sn = n_arm_sn + 2'd1;
      n_deadline = 64'd0;
    end
    if (do_err) begin
      n_state = CQ_STATE_ERROR;
      n_deadline = 64'd0;
      m_event_valid = 1'b1; m_event_type = EQE_TYPE_CQ_ERROR; m_event_eqn = 24'd0; m_event_cqn = sel_cqn;
      m_event_syndrome = err_syn; m_event_data = {40'd0, n_pi};
    end
  end

  // ---------------------------------------------------------------- state update
  integer r;
  always @(posedge clk) begin
    if (rst) begin
      for (r = 0; r < NUM_CQS; r = r + 1) begin
        t_valid[r] <= 1'b0;
        t_deadline[r] <= 64'd0;
      end
      waiting_ci <= 1'b0;
      refreshed <= 1'b0;
      resizing <= 8'd0;
    end else begin
      waiting_ci <= n_waiting_ci;
      refreshed <= n_refreshed;
      resizing <= n_resizing;
      if (we && sel_in) begin
        t_valid[si] <= n_valid;                t_state[si] <= n_state;             t_log_size[si] <= n_log_size;
        t_base[si] <= n_base;                  t_dbr[si] <= n_dbr;                 t_eqn[si] <= n_eqn;
        t_mod_count[si] <= n_mod_count;        t_mod_period[si] <= n_mod_period;   t_period_mode[si] <= n_period_mode;
        t_oi[si] <= n_oi;                      t_always[si] <= n_always;           t_pi[si] <= n_pi;
        t_ci[si] <= n_ci;                      t_last_notified[si] <= n_last_notified;
        t_last_sol[si] <= n_last_sol;          t_any_sol[si] <= n_any_sol;         t_arm_sn[si] <= n_arm_sn;
        t_pending[si] <= n_pending;            t_timer_start[si] <= n_timer_start; t_deadline[si] <= n_deadline;
      end
    end
  end
endmodule

// cq_writer_pipelined: the CQ writer as a pipeline a hardware team can take (docs/rtl.md, "The
// pipelined writer"), cycle for cycle the C++ model model/cq/cq_writer_pipeline.cpp. The rules of
// every action are the ones of model/cq/cq_writer_core.cpp (and of rtl/cq_writer.v, the first RTL,
// retired); what differs is how the state is kept and when things happen:
//
//   stage 1  select one item in fixed priority (control, CQE-write failure, consumer-index
//            response, timer expiry, arm, completion); its CQN addresses the context RAM
//   stage 2  the context arrives from the RAM's output register, or from the write bypass when
//            stage 3 wrote it on the edge that read the RAM; every difference and comparison
//            stage 3 decides on is taken here into registers. An item for the CQ stage 3 acts on
//            waits here a cycle (the hazard stall), so stage 2 never needs a context stage 3 is
//            still deciding
//   stage 3  decide from those registers; write the context back; offer outputs to the skid buffers
//
// - The CQ context table is one RAM of CTX_W bits per CQ with a registered read (cq_context_table:
//   cleared after reset by a sweep of NUM_CQS cycles). Nothing is compared across CQs.
// - Completions wait in a replay buffer of four records (s_cpl_ready is a register: the buffer is
//   not full) and are issued speculatively; when stage 3 leaves completions held (a consumer-index
//   refresh, a resize) those behind it in stages 1 and 2 are squashed and issued again, in order.
// - Every output leaves through a skid_buffer: valid and data from registers, ready registered.
//   Stage 3 holds, and stages 1 and 2 with it, while any of them is full.
// - Moderation periods: a microsecond tick (CYCLES_PER_US cycles) counted in 32 bits; a period
//   starts at a tick and a phase, its deadline is the first tick at or after the exact end; a
//   running timer is one entry in the timing wheel (cq_timer_wheel), whose expiries are stage 1's
//   fourth source. An expiry whose deadline moved later re-inserts the CQ.
// - CQE timestamps are sampled from i_timestamp, the device's free-running core-clock cycle count
//   (its timestamp unit, shared by every block that stamps: docs/formats.md), on the cycle stage 3
//   acts. Nothing else reads it: the writer's own time is its microsecond tick, from reset.
//
// Side band (o_ctl_done, o_bad_db_*, o_cov) is valid in the cycle stage 3 acts; o_ready is high
// once the context table and the wheel are cleared (no item is taken before).
`default_nettype none
`include "vhca_formats.vh"

module cq_writer_pipelined #(
    parameter integer NUM_CQS = 64,
    parameter integer CYCLES_PER_US = 500
) (
    input  wire         clk,
    input  wire         rst,
    output wire         o_ready,
    // 1 raises the event owed at an arm at once (the rule before S26); 0 hands it to moderation.
    input  wire         cfg_arm_at_once,
    input  wire [63:0]  i_timestamp,        // the device's cycle count, written into each CQE

    input  wire         s_ctl_valid,
    output wire         s_ctl_ready,
    input  wire [2:0]   s_ctl_op,
    input  wire [23:0]  s_ctl_cqn,
    input  wire [4:0]   s_ctl_log_size,
    input  wire [63:0]  s_ctl_base,
    input  wire [63:0]  s_ctl_dbr,
    input  wire [23:0]  s_ctl_eqn,
    input  wire [15:0]  s_ctl_mod_count,
    input  wire [11:0]  s_ctl_mod_period,
    input  wire         s_ctl_period_mode,
    input  wire         s_ctl_overrun_ignore,
    input  wire         s_ctl_always_armed,

    input  wire         s_aerr_valid,
    output wire         s_aerr_ready,
    input  wire [23:0]  s_aerr_cqn,

    input  wire         s_ci_valid,
    output wire         s_ci_ready,
    input  wire [23:0]  s_ci_cqn,
    input  wire [23:0]  s_ci_ci,
    input  wire         s_ci_ok,

    input  wire         s_arm_valid,
    output wire         s_arm_ready,
    input  wire [23:0]  s_arm_cqn,
    input  wire [1:0]   s_arm_sn,
    input  wire         s_arm_cmd,
    input  wire [23:0]  s_arm_ci,

    input  wire         s_cpl_valid,
    output wire         s_cpl_ready,
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

    output wire         m_dma_valid,
    input  wire         m_dma_ready,
    output wire [63:0]  m_dma_addr,
    output wire [511:0] m_dma_data,
    output wire [23:0]  m_dma_cqn,

    output wire         m_event_valid,
    input  wire         m_event_ready,
    output wire [7:0]   m_event_type,
    output wire [23:0]  m_event_eqn,
    output wire [23:0]  m_event_cqn,
    output wire [7:0]   m_event_syndrome,
    output wire [63:0]  m_event_data,

    output wire         m_ci_req_valid,
    input  wire         m_ci_req_ready,
    output wire [23:0]  m_ci_req_cqn,
    output wire [63:0]  m_ci_req_dbr,

    output reg          o_ctl_done,
    output reg          o_bad_db_valid,
    output reg  [7:0]   o_bad_db_reason,
    output reg  [23:0]  o_bad_db_cqn,
    output reg  [16:0]  o_cov,
    output wire [23:0]  o_cov_cqn,          // the CQ stage 3 acted on (per-CQ coverage)
    output wire         o_hold,             // stage 3 holds for a full skid buffer (an output stall)
    output wire         o_busy,             // something in flight: the next cycle must be clocked
    output wire         o_timers            // a timer is running: the clock is needed from the next tick
);
  localparam integer CQN_W = NUM_CQS > 1 ? $clog2(NUM_CQS) : 1;
  localparam [31:0]  NUM_CQS_32 = NUM_CQS;
  localparam [23:0]  NUM_CQS_24 = NUM_CQS_32[23:0];
  localparam integer PRESC_W = CYCLES_PER_US > 1 ? $clog2(CYCLES_PER_US) : 1;
  localparam integer PRESC_LAST = CYCLES_PER_US - 1;

  /* verilator lint_off UNUSEDPARAM */
`include "vhca_codes.vh"
  /* verilator lint_on UNUSEDPARAM */
  localparam [2:0] K_NONE = 3'd0, K_CTL = 3'd1, K_AERR = 3'd2, K_CI = 3'd3, K_EXP = 3'd4, K_ARM = 3'd5, K_CPL = 3'd6;
  localparam integer COV_CQE = 0, COV_EVENT = 1, COV_BY_COUNT = 2, COV_BY_PERIOD = 3, COV_IMMEDIATE = 4,
                     COV_AT_ARM = 5, COV_ARM = 6, COV_ARM_UPGRADED = 7, COV_ARM_IGNORED = 8, COV_ARM_STALE = 9,
                     COV_CI_REFRESH = 10, COV_OVERFLOW = 11, COV_OWNER_WRAP = 12, COV_DROPPED = 13,
                     COV_BAD_RECORD = 14, COV_TIMER_EXPIRY = 15, COV_ARM_OWED = 16;

  // ---------------------------------------------------------------- the context word
  // {listed, tm_dl, tm_run, period_end, pending, arm_sn, any_sol, last_sol, last_notified,
  //  ci, pi, always, oi, period_mode, mod_period, mod_count, eqn, dbr, base, log_size, state, valid}
  // period_end is the tick a period begun at the CQ's last period start ends on (the tick it began
  // in plus mod_period): kept as that sum, taken when the period starts, so that deciding whether
  // it is due is one subtraction (docs/rtl.md, "Logic depth").
  localparam integer F_VALID = 0, F_STATE = 1, F_LOG = 4, F_BASE = 9, F_DBR = 73, F_EQN = 137, F_MCOUNT = 161,
                     F_MPERIOD = 177, F_PMODE = 189, F_OI = 190, F_ALWAYS = 191, F_PI = 192, F_CI = 216,
                     F_LASTN = 240, F_LASTS = 264, F_ANYS = 288, F_SN = 289, F_PEND = 291, F_PEND_END = 307,
                     F_RUN = 339, F_DL = 340, F_LISTED = 372, CTX_W = 373;

  // ---------------------------------------------------------------- time
  reg [PRESC_W-1:0] presc;
  reg [31:0]        now_tick;   // microseconds since reset
  reg [31:0]        now_tick1;  // now_tick + 1, kept beside it (no incrementer on the paths that read it)
  always @(posedge clk) begin
    if (rst) begin
      presc <= {PRESC_W{1'b0}};
      now_tick <= 32'd0;
      now_tick1 <= 32'd1;
    end else begin
      if (presc == PRESC_LAST[PRESC_W-1:0]) begin
        presc <= {PRESC_W{1'b0}};
        now_tick <= now_tick1;
        now_tick1 <= now_tick1 + 32'd1;
      end else begin
        presc <= presc + 1'b1;
      end
    end
  end

  // ---------------------------------------------------------------- skid buffers (outputs)
  reg          dma_in_valid;
  reg  [599:0] dma_in_data;
  wire         dma_in_ready;
  skid_buffer #(.WIDTH(600)) dma_skid (
      .clk(clk), .rst(rst), .s_valid(dma_in_valid), .s_ready(dma_in_ready), .s_data(dma_in_data),
      .m_valid(m_dma_valid), .m_ready(m_dma_ready), .m_data({m_dma_cqn, m_dma_addr, m_dma_data}));

  reg          ev_in_valid;
  reg  [127:0] ev_in_data;
  wire         ev_in_ready;
  skid_buffer #(.WIDTH(128)) event_skid (
      .clk(clk), .rst(rst), .s_valid(ev_in_valid), .s_ready(ev_in_ready), .s_data(ev_in_data),
      .m_valid(m_event_valid), .m_ready(m_event_ready),
      .m_data({m_event_type, m_event_eqn, m_event_cqn, m_event_syndrome, m_event_data}));

  reg          cir_in_valid;
  reg  [87:0]  cir_in_data;
  wire         cir_in_ready;
  skid_buffer #(.WIDTH(88)) ci_skid (
      .clk(clk), .rst(rst), .s_valid(cir_in_valid), .s_ready(cir_in_ready), .s_data(cir_in_data),
      .m_valid(m_ci_req_valid), .m_ready(m_ci_req_ready), .m_data({m_ci_req_cqn, m_ci_req_dbr}));

  reg                   ins_in_valid;
  reg  [CQN_W+13:0]     ins_in_data;
  wire                  ins_in_ready;
  wire                  ins_valid;
  wire                  ins_ready;
  wire [CQN_W+13:0]     ins_data;
  skid_buffer #(.WIDTH(CQN_W + 14)) ins_skid (
      .clk(clk), .rst(rst), .s_valid(ins_in_valid), .s_ready(ins_in_ready), .s_data(ins_in_data),
      .m_valid(ins_valid), .m_ready(ins_ready), .m_data(ins_data));

  // ---------------------------------------------------------------- the timing wheel
  wire             wheel_ready;
  wire             wheel_idle;
  wire             exp_valid;
  wire             exp_ready;
  wire [CQN_W-1:0] exp_cqn;
  /* verilator lint_off UNUSEDSIGNAL */
  wire [13:0]      wheel_now, exp_tick;
  wire             wheel_late;
  /* verilator lint_on UNUSEDSIGNAL */
  cq_timer_wheel #(.NUM_CQS(NUM_CQS), .CYCLES_PER_US(CYCLES_PER_US), .CQN_WIDTH(CQN_W)) wheel (
      .clk(clk), .rst(rst), .o_ready(wheel_ready), .o_now(wheel_now), .o_late(wheel_late), .o_idle(wheel_idle),
      .s_ins_valid(ins_valid), .s_ins_ready(ins_ready), .s_ins_cqn(ins_data[CQN_W+13:14]),
      .s_ins_deadline(ins_data[13:0]),
      .m_exp_valid(exp_valid), .m_exp_ready(exp_ready), .m_exp_cqn(exp_cqn), .m_exp_tick(exp_tick));

  // ---------------------------------------------------------------- the context table
  wire             table_ready;
  wire             ram_re;
  wire [CQN_W-1:0] ram_raddr;
  wire [CTX_W-1:0] ram_rdata;
  wire             ram_we;
  wire [CQN_W-1:0] ram_waddr;
  reg  [CTX_W-1:0] n_ctx;
  cq_context_table #(.DEPTH(NUM_CQS), .WIDTH(CTX_W), .ADDR_WIDTH(CQN_W)) ctx_table (
      .clk(clk), .rst(rst), .o_ready(table_ready),
      .i_re(ram_re), .i_raddr(ram_raddr), .o_rdata(ram_rdata),
      .i_we(ram_we), .i_waddr(ram_waddr), .i_wdata(n_ctx));

  assign o_ready = table_ready && wheel_ready;

  // ---------------------------------------------------------------- global state
  reg       waiting_ci;   // the head completion waits for a consumer-index response
  reg       refreshed;    // the consumer index was just refreshed for the head completion
  reg [7:0] resizing;     // CQs in resize: completions are held

  // ---------------------------------------------------------------- the replay buffer
  reg  [1:0]  rb_head;
  reg  [2:0]  rb_count;
  reg  [2:0]  rb_issued;  // the oldest entries, in stages 2 and 3
  reg  [23:0] rb_cqn [0:3];
  reg         rb_is_send [0:3];
  reg  [3:0]  rb_opcode [0:3];
  reg  [7:0]  rb_send_opcode [0:3];
  reg  [7:0]  rb_syndrome [0:3];
  reg  [7:0]  rb_vendor_syndrome [0:3];
  reg  [63:0] rb_wr_id [0:3];
  reg  [31:0] rb_byte_cnt [0:3];
  reg         rb_imm_present [0:3];
  reg  [31:0] rb_imm [0:3];
  reg  [23:0] rb_qpn [0:3];
  reg  [23:0] rb_src_qpn [0:3];
  reg  [15:0] rb_slid [0:3];
  reg  [3:0]  rb_sl [0:3];
  reg         rb_grh [0:3];
  reg  [15:0] rb_pkey_index [0:3];
  reg         rb_se [0:3];
  reg  [15:0] rb_wqe_counter [0:3];
  assign s_cpl_ready = o_ready && rb_count != 3'd4;
  wire [1:0] rb_tail = rb_head + rb_count[1:0];
  wire [1:0] rb_next = rb_head + rb_issued[1:0];
  wire [1:0] h = rb_head;

  // ---------------------------------------------------------------- stage registers
  reg [2:0]  s2_kind, s3_kind;
  reg [23:0] s2_cqn, s3_cqn;
  reg        s3_in;                        // s3_cqn names a CQ of the table
  reg [2:0]  s2_op, s3_op;                 // control
  reg [4:0]  s2_log, s3_log;
  reg [63:0] s2_base, s3_base, s2_dbr, s3_dbr;
  reg [23:0] s2_eqn, s3_eqn;
  reg [15:0] s2_mcount, s3_mcount;
  reg [11:0] s2_mperiod, s3_mperiod;
  reg [2:0]  s2_flags, s3_flags;           // {always_armed, overrun_ignore, period_mode}
  reg [1:0]  s2_sn, s3_sn;                 // arm
  reg        s2_cmd, s3_cmd;
  reg [23:0] s2_ci, s3_ci;                 // arm's index, or the refreshed consumer index
  reg        s2_ok, s3_ok;                 // consumer-index response
  reg [CTX_W-1:0] s3_ctx;
  reg             wb_hit;                  // stage 2's CQ was written on the last advancing edge
  reg [CTX_W-1:0] wb_ctx;                  // the context written then
  // Taken in stage 2 from the context (docs/rtl.md, "Logic depth").
  reg        s3_ge, s3_gt;                 // pi - (arm or refreshed index) >= size, > size
  reg        s3_ci_ge;                     // pi - ci >= size: the cached index says full
  reg        s3_newer;                     // pi != the arm's index
  reg        s3_sol_newer;                 // a solicited CQE newer than the arm's index
  reg [15:0] s3_arm_pending;               // the count an owed arm leaves
  reg        s3_arm_count;                 // and whether it reaches the moderation count
  reg [23:0] s3_pi1;
  reg        s3_sol_expire;                // the last solicited CQE falls out of the ring with this one
  reg        s3_owner, s3_owner_wrap;
  reg [63:0] s3_cqe_addr;
  reg        s3_pend_ge, s3_pend1_ge;      // pending (+ 1) >= mod_count
  reg        s3_pend_ge_new;               // pending >= a new mod_count
  reg [15:0] s3_pending1;
  reg        s3_same_then;                 // the running timer is the period's own deadline
  // Taken every cycle for the next one (the tick moves while stage 3 holds).
  reg        s3_due;                       // the period's deadline has come
  reg        s3_dl_passed;                 // the running timer's deadline has come
  reg [31:0] s3_dl_now, s3_dl_new;         // the deadline of a period begun now (new settings)
  reg        s3_same_now;                  // the running timer has that deadline

  // ---------------------------------------------------------------- stage 1: select
  wire advance = o_ready && dma_in_ready && ev_in_ready && cir_in_ready && ins_in_ready;
  assign o_hold = o_ready && !advance;
  // Stage 2 holds an item for the CQ stage 3 acts on: it waits a cycle (see stage 2).
  wire hazard = s2_kind != K_NONE && s3_kind != K_NONE && s2_cqn == s3_cqn;
  wire load = advance && !hazard;   // stage 3 takes stage 2's item, stage 2 stage 1's, on this edge
  reg  [2:0]  s1_kind;
  reg  [23:0] s1_cqn;
  always @(*) begin
    s1_kind = K_NONE;
    s1_cqn = 24'd0;
    if (load) begin
      if (s_ctl_valid) begin s1_kind = K_CTL; s1_cqn = s_ctl_cqn; end
      else if (s_aerr_valid) begin s1_kind = K_AERR; s1_cqn = s_aerr_cqn; end
      else if (s_ci_valid) begin s1_kind = K_CI; s1_cqn = s_ci_cqn; end
      else if (exp_valid) begin s1_kind = K_EXP; s1_cqn = {{(24-CQN_W){1'b0}}, exp_cqn}; end
      else if (s_arm_valid) begin s1_kind = K_ARM; s1_cqn = s_arm_cqn; end
      else if (!waiting_ci && resizing == 8'd0 && rb_issued != rb_count) begin
        s1_kind = K_CPL; s1_cqn = rb_cqn[rb_next];
      end
    end
  end
  assign s_ctl_ready = s1_kind == K_CTL;
  assign s_aerr_ready = s1_kind == K_AERR;
  assign s_ci_ready = s1_kind == K_CI;
  assign exp_ready = s1_kind == K_EXP;
  assign s_arm_ready = s1_kind == K_ARM;
  assign ram_re = load;
  assign ram_raddr = s1_cqn[CQN_W-1:0];

  // ---------------------------------------------------------------- stage 3: act
  // Written for logic depth (docs/rtl.md, "Logic depth"): every sum, difference and comparison is
  // taken from the context as it arrives, side by side, and the decisions that pick among them
  // come last; no result waits for another's arithmetic. What it decides is the rule set of
  // model/cq/cq_writer_core.cpp, unchanged (the lockstep with model/cq/cq_writer_pipeline.cpp holds it).

  // The context as it arrives.
  wire        c_in = s3_in;
  wire        x_valid = s3_ctx[F_VALID] && c_in;
  wire [2:0]  x_state = s3_ctx[F_STATE +: 3];
  wire [4:0]  x_log = s3_ctx[F_LOG +: 5];
  wire [63:0] x_base = s3_ctx[F_BASE +: 64];
  wire [63:0] x_dbr = s3_ctx[F_DBR +: 64];
  wire [23:0] x_eqn = s3_ctx[F_EQN +: 24];
  wire [15:0] x_mcount = s3_ctx[F_MCOUNT +: 16];
  wire [11:0] x_mperiod = s3_ctx[F_MPERIOD +: 12];
  wire        x_pmode = s3_ctx[F_PMODE];
  wire        x_oi = s3_ctx[F_OI];
  wire [23:0] x_pi = s3_ctx[F_PI +: 24];
  wire [23:0] x_ci = s3_ctx[F_CI +: 24];
  wire [23:0] x_last_sol = s3_ctx[F_LASTS +: 24];
  wire        x_any_sol = s3_ctx[F_ANYS];
  wire [1:0]  x_sn = s3_ctx[F_SN +: 2];
  wire [15:0] x_pending = s3_ctx[F_PEND +: 16];
  wire [31:0] x_period_end = s3_ctx[F_PEND_END +: 32];
  wire        x_run = s3_ctx[F_RUN];
  wire [31:0] x_dl = s3_ctx[F_DL +: 32];
  wire        x_listed = s3_ctx[F_LISTED];

  // What the item is. Stage 3 decides whether or not it acts on this edge (advance); the effects
  // are gated by advance at the end, so that the decision does not wait for the skid buffers.
  wire is_ctl = s3_kind == K_CTL;
  wire is_aerr = s3_kind == K_AERR;
  wire is_ci = s3_kind == K_CI;
  wire is_exp = s3_kind == K_EXP;
  wire is_arm = s3_kind == K_ARM;
  wire is_cpl = s3_kind == K_CPL;
  wire ctl_in = is_ctl && c_in;
  wire op_create = ctl_in && s3_op == CQ_CTL_CREATE;
  wire op_modify = ctl_in && s3_op == CQ_CTL_MODIFY_MODERATION;
  wire op_commit = ctl_in && s3_op == CQ_CTL_RESIZE_COMMIT;
  wire op_destroy = ctl_in && s3_op == CQ_CTL_DESTROY;

  // States.
  wire st_error = x_state == CQ_STATE_ERROR;
  wire st_next = x_state == CQ_STATE_ARMED_NEXT;
  wire st_sol = x_state == CQ_STATE_ARMED_SOLICITED;
  wire st_always = x_state == CQ_STATE_ALWAYS_ARMED;
  wire st_armed = st_next || st_sol || st_always;

  // The differences and comparisons of this context (s3_ge ... owner, the time tests) were taken
  // in stage 2 ("stage 2: the context, and what stage 3 will decide on", below).

  // The head completion record.
  wire sol = (rb_syndrome[h] != 8'd0) || (!rb_is_send[h] && rb_se[h]);

  // Consumer-index response.
  wire ci_match = is_ci && waiting_ci && rb_count != 3'd0 && rb_cqn[h] == s3_cqn && c_in;
  wire ci_fail = ci_match && x_valid && !s3_ok;
  wire ci_bad = ci_match && x_valid && s3_ok && s3_gt;
  wire ci_accept = ci_match && x_valid && s3_ok && !s3_gt;

  // Completion of the head record (S13, S14): from the replay buffer, or after a refresh. The
  // two ways to write it are decided apart, each from its own index difference.
  wire do_cpl = is_cpl || (ci_accept && resizing == 8'd0);
  wire use_refresh = is_cpl ? refreshed : 1'b1;
  wire full = !x_oi && (is_ci ? s3_ge : s3_ci_ge);
  wire cpl_bad_record = do_cpl && !x_valid;
  wire cpl_dropped = do_cpl && x_valid && st_error;
  wire cpl_full = do_cpl && x_valid && !st_error && full;
  wire cpl_refresh = cpl_full && !use_refresh;
  wire cpl_overflow = cpl_full && use_refresh;
  wire write_cpl = is_cpl && x_valid && !st_error && !(!x_oi && s3_ci_ge);
  wire write_ci = ci_match && x_valid && s3_ok && !s3_gt && resizing == 8'd0 && !st_error && !(!x_oi && s3_ge);
  wire do_write = write_cpl || write_ci;

  // Arm doorbell (S9-S11, S26).
  wire arm_unknown = is_arm && !x_valid;
  wire arm_in_error = is_arm && x_valid && st_error;
  wire arm_range = is_arm && x_valid && !st_error && s3_gt;
  wire arm_stale = is_arm && x_valid && !st_error && !s3_gt && s3_sn != x_sn;
  wire arm_checked = is_arm && x_valid && !st_error && !s3_gt && s3_sn == x_sn;
  wire arm_ignored = arm_checked && (st_next || st_always || (st_sol && s3_cmd));
  wire arm_ok = arm_checked && !(st_next || st_always || (st_sol && s3_cmd));
  wire arm_upgrade = arm_ok && st_sol;
  wire arm_to_next = st_sol || !s3_cmd;     // the state an accepted arm leaves: ARMED_NEXT or ARMED_SOLICITED
  wire arm_owes = arm_to_next ? s3_newer : (x_any_sol && s3_sol_newer);
  wire arm_at_arm = arm_ok && arm_owes && cfg_arm_at_once;
  wire arm_owed = arm_ok && arm_owes && !cfg_arm_at_once;
  wire [15:0] arm_pending = s3_arm_pending;

  // Timer expiry: a running timer whose deadline moved later goes back into the wheel.
  wire exp_moved = is_exp && x_run && !s3_dl_passed;
  wire exp_ends = is_exp && x_run && s3_dl_passed;
  wire exp_fire = exp_ends && st_armed && x_pending != 16'd0;

  // Moderation (S12, S26) after a CQE written (w_), new settings (m_) or an arm that owes an
  // event (a_): each case's outcome is decided on its own, from the context, and the case that
  // happened picks one at the end. An event fires at once without moderation, when the count is
  // reached, or when the period is over; otherwise a timer runs to the period's deadline (the first
  // tick at or after its exact end), unless that very deadline is running already.
  wire        qual = st_sol ? sol : st_armed;
  wire        pend_inc = qual && x_pending != 16'hFFFF;
  wire        nomod = x_mcount == 16'd0 && x_mperiod == 12'd0;
  wire        pend_nz = x_pending != 16'd0;
  wire [31:0] dl_then = x_period_end;             // the period began earlier: measured from its start
  wire        due_then = s3_due;
  wire        same_then = s3_same_then;
  wire [31:0] dl_now = s3_dl_now;                 // a period begun now: never due yet
  wire [31:0] dl_new = s3_dl_new;                 // the same, with new settings
  wire        same_now = s3_same_now;

  wire        w_restart = x_pmode && (qual || !cfg_arm_at_once);   // the CQE restarts the period
  wire        w_live = st_armed && (pend_inc || pend_nz);
  wire        w_count = x_mcount != 16'd0 && (pend_inc ? s3_pend1_ge : s3_pend_ge);
  wire        w_due = x_mperiod != 12'd0 && !w_restart && due_then;
  wire        w_fire = w_live && (nomod || w_count || w_due);
  wire        w_start = w_live && !nomod && !w_count && x_mperiod != 12'd0 &&
                        (w_restart ? !same_now : !due_then && !same_then);

  wire        m_nomod = s3_mcount == 16'd0 && s3_mperiod == 12'd0;
  wire        m_count = s3_mcount != 16'd0 && s3_pend_ge_new;
  wire        m_live = st_armed && pend_nz;
  wire        m_fire = m_live && (m_nomod || m_count);
  wire        m_start = m_live && !m_nomod && !m_count && s3_mperiod != 12'd0;  // its timer was stopped

  wire        a_count = s3_arm_count;
  wire        a_due = x_mperiod != 12'd0 && due_then;
  wire        a_fire = nomod || a_count || a_due;
  wire        a_start = !nomod && !a_count && x_mperiod != 12'd0 && !due_then && !same_then;

  wire        fire_immediate = (do_write && w_live && nomod) || (op_modify && m_live && m_nomod) || (arm_owed && nomod);
  wire        fire_count = (do_write && w_live && !nomod && w_count) || (op_modify && m_live && !m_nomod && m_count) ||
                           (arm_owed && !nomod && a_count);
  wire        fire_period = (do_write && w_live && !nomod && !w_count && w_due) || (arm_owed && !nomod && !a_count && a_due);
  wire        r_start = (do_write && w_start) || (op_modify && m_start) || (arm_owed && a_start);
  wire        ts_restart = op_modify || (do_write && w_restart);
  wire [31:0] dl = op_modify ? dl_new : ts_restart ? dl_now : dl_then;
  wire        r_run = !op_modify && x_run;
  wire        start_timer = r_start || exp_moved;
  wire        do_insert = start_timer && (is_exp || !x_listed);
  wire        do_fire = arm_at_arm || exp_fire || (do_write && w_fire) || (op_modify && m_fire) || (arm_owed && a_fire);

  // Errors (S15): the CQ enters its error state and reports it.
  wire aerr_ok = is_aerr && x_valid && !st_error;
  wire do_err = aerr_ok || ci_fail || ci_bad || cpl_overflow;
  wire [7:0] err_syn = ci_bad ? CQ_ERROR_CQ_BAD_DOORBELL_RECORD : cpl_overflow ? CQ_ERROR_CQ_OVERRUN
                                                                  : CQ_ERROR_CQ_ACCESS_VIOLATION;

  // The next context, field by field.
  wire [23:0] n_pi = op_create ? 24'd0 : do_write ? s3_pi1 : x_pi;
  wire [2:0]  fire_state = (!arm_ok && st_always) ? CQ_STATE_ALWAYS_ARMED : CQ_STATE_DISARMED;
  wire [2:0]  arm_state = arm_to_next ? CQ_STATE_ARMED_NEXT : CQ_STATE_ARMED_SOLICITED;
  wire [2:0]  n_state = do_err ? CQ_STATE_ERROR : do_fire ? fire_state : arm_ok ? arm_state :
                        op_create ? (s3_flags[2] ? CQ_STATE_ALWAYS_ARMED : CQ_STATE_DISARMED) : x_state;
  wire        n_valid = op_create ? 1'b1 : op_destroy ? 1'b0 : x_valid;
  wire        ctl_ring = op_create || op_commit;
  wire [4:0]  n_log = ctl_ring ? s3_log : x_log;
  wire [63:0] n_base = ctl_ring ? s3_base : x_base;
  wire [63:0] n_dbr = op_create ? s3_dbr : x_dbr;
  wire [23:0] n_eqn = op_create ? s3_eqn : x_eqn;
  wire        ctl_mod = op_create || op_modify;
  wire [15:0] n_mcount = ctl_mod ? s3_mcount : x_mcount;
  wire [11:0] n_mperiod = ctl_mod ? s3_mperiod : x_mperiod;
  wire        n_pmode = ctl_mod ? s3_flags[0] : x_pmode;
  wire        n_oi = op_create ? s3_flags[1] : x_oi;
  wire        n_always = op_create ? s3_flags[2] : s3_ctx[F_ALWAYS];
  wire [23:0] n_ci = op_create ? 24'd0 : ci_accept ? s3_ci : x_ci;
  wire [23:0] n_last_notified = op_create ? 24'd0 : do_fire ? n_pi : s3_ctx[F_LASTN +: 24];
  wire [23:0] n_last_sol = op_create ? 24'd0 : (do_write && sol) ? s3_pi1 : x_last_sol;
  wire        n_any_sol = op_create ? 1'b0 : (do_write && sol) ? 1'b1 : (do_write && s3_sol_expire) ? 1'b0 : x_any_sol;
  wire [1:0]  n_sn = op_create ? 2'd0 : do_fire ? x_sn + 2'd1 : x_sn;
  wire [15:0] n_pending = (op_create || do_fire) ? 16'd0 : arm_owed ? arm_pending : (arm_ok && !arm_upgrade) ? 16'd0 :
                          (do_write && pend_inc) ? s3_pending1 : x_pending;
  wire        ts_now = op_create || ts_restart || do_fire;
  wire [31:0] n_period_end = !ts_now ? x_period_end : ctl_mod ? dl_new : dl_now;
  wire        n_run = !(op_create || op_destroy || do_fire || do_err || exp_ends) && (r_start || r_run);
  wire [31:0] n_dl = op_create ? 32'd0 : r_start ? dl : x_dl;
  wire        n_listed = do_insert ? 1'b1 : is_exp ? 1'b0 : x_listed;
  always @(*) begin
    n_ctx = {n_listed, n_dl, n_run, n_period_end, n_pending, n_sn, n_any_sol, n_last_sol, n_last_notified,
             n_ci, n_pi, n_always, n_oi, n_pmode, n_mperiod, n_mcount, n_eqn, n_dbr, n_base, n_log, n_state, n_valid};
  end

  // Writer state.
  wire       n_waiting_ci = cpl_refresh ? 1'b1 : ci_match ? 1'b0 : waiting_ci;
  wire       n_refreshed = do_cpl ? 1'b0 : ci_accept ? 1'b1 : refreshed;
  wire [7:0] n_resizing = !ctl_in ? resizing :
                          s3_op == CQ_CTL_RESIZE_BEGIN ? resizing + 8'd1 :
                          (s3_op == CQ_CTL_RESIZE_COMMIT || s3_op == CQ_CTL_RESIZE_ABORT) && resizing != 8'd0 ? resizing - 8'd1 :
                          resizing;
  wire we = ctl_in || aerr_ok || (ci_match && x_valid) || is_exp || arm_ok || (do_cpl && x_valid);
  wire retire = advance && (ci_fail || ci_bad || cpl_bad_record || cpl_dropped || cpl_overflow || do_write);

  // The CQE (docs/formats.md).
  reg [511:0] cqe;
  always @(*) begin
    cqe = 512'd0;
    cqe[`CQE_WR_ID_LO +: `CQE_WR_ID_W] = rb_wr_id[h];
    cqe[`CQE_TIMESTAMP_LO +: `CQE_TIMESTAMP_W] = i_timestamp;
    cqe[`CQE_QPN_LO +: `CQE_QPN_W] = rb_qpn[h];
    cqe[`CQE_WQE_COUNTER_LO +: `CQE_WQE_COUNTER_W] = rb_wqe_counter[h];
    if (rb_syndrome[h] != 8'd0) begin
      cqe[`CQE_SYNDROME_LO +: `CQE_SYNDROME_W] = rb_syndrome[h];
      cqe[`CQE_VENDOR_SYNDROME_LO +: `CQE_VENDOR_SYNDROME_W] = rb_vendor_syndrome[h];
      cqe[`CQE_OPCODE_LO +: `CQE_OPCODE_W] = rb_is_send[h] ? CQE_OP_REQ_ERR : CQE_OP_RESP_ERR;
    end else begin
      cqe[`CQE_OPCODE_LO +: `CQE_OPCODE_W] = rb_opcode[h];
      cqe[`CQE_BYTE_CNT_LO +: `CQE_BYTE_CNT_W] = rb_byte_cnt[h];
      cqe[`CQE_IMM_PRESENT_LO +: `CQE_IMM_PRESENT_W] = rb_imm_present[h];
      cqe[`CQE_IMM_LO +: `CQE_IMM_W] = rb_imm[h];
      if (rb_is_send[h]) begin
        cqe[`CQE_SEND_OPCODE_LO +: `CQE_SEND_OPCODE_W] = rb_send_opcode[h];
      end else begin
        cqe[`CQE_SRC_QPN_LO +: `CQE_SRC_QPN_W] = rb_src_qpn[h];
        cqe[`CQE_SLID_LO +: `CQE_SLID_W] = rb_slid[h];
        cqe[`CQE_SL_LO +: `CQE_SL_W] = rb_sl[h];
        cqe[`CQE_GRH_LO +: `CQE_GRH_W] = rb_grh[h];
        cqe[`CQE_PKEY_INDEX_LO +: `CQE_PKEY_INDEX_W] = rb_pkey_index[h];
        cqe[`CQE_SE_LO +: `CQE_SE_W] = rb_se[h];
      end
    end
    cqe[`CQE_OWNER_LO +: `CQE_OWNER_W] = s3_owner;
  end

  // Outputs to the skid buffers, and the side band.
  always @(*) begin
    dma_in_valid = advance && do_write;
    dma_in_data = {rb_cqn[h], s3_cqe_addr, cqe};
    ev_in_valid = advance && (do_fire || do_err);
    ev_in_data = do_err ? {EQE_TYPE_CQ_ERROR, 24'd0, s3_cqn, err_syn, 40'd0, n_pi}
                        : {EQE_TYPE_COMPLETION, x_eqn, s3_cqn, 8'd0, 40'd0, n_pi};
    cir_in_valid = advance && cpl_refresh;
    cir_in_data = {rb_cqn[h], x_dbr};
    ins_in_valid = advance && do_insert;
    ins_in_data = {s3_cqn[CQN_W-1:0], n_dl[13:0]};
    o_ctl_done = advance && is_ctl;
    o_bad_db_valid = advance && (arm_unknown || arm_in_error || arm_range || arm_stale);
    o_bad_db_reason = !o_bad_db_valid ? 8'd0 : arm_unknown ? DB_ERR_UNKNOWN_OBJECT : arm_in_error ? DB_ERR_OBJECT_IN_ERROR :
                      arm_range ? DB_ERR_INDEX_OUT_OF_RANGE : arm_stale ? DB_ERR_STALE_ARM_SN : 8'd0;
    o_bad_db_cqn = o_bad_db_valid ? s3_cqn : 24'd0;
    o_cov = 17'd0;
    o_cov[COV_CQE] = do_write;
    o_cov[COV_EVENT] = do_fire;
    o_cov[COV_BY_COUNT] = fire_count;
    o_cov[COV_BY_PERIOD] = fire_period || exp_fire;
    o_cov[COV_IMMEDIATE] = fire_immediate;
    o_cov[COV_AT_ARM] = arm_at_arm;
    o_cov[COV_ARM] = is_arm;
    o_cov[COV_ARM_UPGRADED] = arm_upgrade;
    o_cov[COV_ARM_IGNORED] = arm_ignored;
    o_cov[COV_ARM_STALE] = arm_stale;
    o_cov[COV_CI_REFRESH] = cpl_refresh;
    o_cov[COV_OVERFLOW] = cpl_overflow;
    o_cov[COV_OWNER_WRAP] = do_write && s3_owner_wrap;
    o_cov[COV_DROPPED] = ci_fail || ci_bad || cpl_dropped || cpl_overflow;
    o_cov[COV_BAD_RECORD] = cpl_bad_record;
    o_cov[COV_TIMER_EXPIRY] = exp_ends;
    o_cov[COV_ARM_OWED] = arm_owed;
    if (!advance) o_cov = 17'd0;
  end

  assign ram_we = advance && we && c_in;
  assign o_cov_cqn = s3_cqn;
  assign ram_waddr = s3_cqn[CQN_W-1:0];

  // ---------------------------------------------------------------- stage 2: the context, and what stage 3 will decide on
  // An item for the CQ stage 3 acts on waits here a cycle (the hazard stall: stage 3 gets a bubble
  // and stage 1 takes nothing), and then takes the context stage 3 wrote (the write bypass). So no
  // context stage 3 is still deciding reaches stage 2, and stage 2 can take every difference and
  // comparison stage 3 decides on from registers.
  wire             s3_writes = ram_we;
  wire [CTX_W-1:0] s2_ctx = wb_hit ? wb_ctx : ram_rdata;
  wire [4:0]  y_log = s2_ctx[F_LOG +: 5];
  wire [63:0] y_base = s2_ctx[F_BASE +: 64];
  wire [15:0] y_mcount = s2_ctx[F_MCOUNT +: 16];
  wire [11:0] y_mperiod = s2_ctx[F_MPERIOD +: 12];
  wire [23:0] y_pi = s2_ctx[F_PI +: 24];
  wire [23:0] y_ci = s2_ctx[F_CI +: 24];
  wire [23:0] y_last_sol = s2_ctx[F_LASTS +: 24];
  wire [2:0]  y_state = s2_ctx[F_STATE +: 3];
  wire [15:0] y_pending = s2_ctx[F_PEND +: 16];
  wire [31:0] y_period_end = s2_ctx[F_PEND_END +: 32];
  wire        y_run = s2_ctx[F_RUN];
  wire [31:0] y_dl = s2_ctx[F_DL +: 32];
  // The ring: its size (a power of two), and differences of indices compared with it. A difference
  // is at least the size when a bit at or above log_size is set.
  wire [24:0] y_size = 25'd1 << y_log;
  wire [23:0] y_mask = ~(24'hFFFFFF << y_log);   // size - 1, decoded without a carry
  wire        y_size_zero = y_log >= 5'd25;       // 1 << log_size overflows the 25-bit size
  wire [23:0] y_newer = y_pi - s2_ci;             // CQEs newer than the arm's index / the refreshed index
  wire [23:0] y_unread = y_pi - y_ci;             // CQEs the cached consumer index leaves unread
  // last_sol - ci <= pi - ci (modulo 2^24) without the two differences in series: counted from
  // ci, last_sol comes no later than pi when both wrap past 2^24 or neither does and
  // last_sol <= pi, or when only pi wraps.
  wire        y_sol_wraps = y_last_sol < s2_ci;
  wire        y_pi_wraps = y_pi < s2_ci;
  wire        y_sol_no_later = y_sol_wraps == y_pi_wraps ? y_last_sol <= y_pi : y_pi_wraps;
  wire [23:0] y_pi1 = y_pi + 24'd1;
  wire [23:0] y_sol_age = y_pi - y_last_sol;      // CQEs since the last solicited one, less one
  wire        y_arm_to_next = y_state == CQ_STATE_ARMED_SOLICITED || !s2_cmd;
  wire        y_ge = y_size_zero || (y_newer & ~y_mask) != 24'd0;
  // Time: what stage 3 compares with the tick, for the cycle it will act on (the next one), taken
  // every cycle (stage 3's own item again while it holds). A period of P microseconds begun on the
  // next cycle ends on the P-th tick after the next cycle's tick (a timer counting the free-running
  // microsecond tick: never late, up to a microsecond early).
  wire        tick_edge = presc == PRESC_LAST[PRESC_W-1:0];  // the next cycle begins a tick
  // Each is taken for both items side by side; the edge keeps the one stage 3 will hold.
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic reached(input [31:0] tick, input [31:0] deadline);  // ticks wrap at 2^32
    reg [31:0] since;  // its sign is read
    begin
      since = tick - deadline;
      reached = !since[31];
    end
  endfunction
  // tick + period == deadline, tested without the carry chain: each bit's carry in is what makes
  // the sum bit right, and it must be the carry out of the bit below.
  function automatic sum_is(input [31:0] tick, input [11:0] period, input [31:0] deadline);
    reg [31:0] b, carry_in, carry_out;
    begin
      b = {20'd0, period};
      carry_in = tick ^ b ^ deadline;
      carry_out = (tick & b) | ((tick | b) & ~deadline);
      sum_is = carry_in == {carry_out[30:0], 1'b0};
    end
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  wire [11:0] t_mperiod = load ? y_mperiod : x_mperiod;
  wire [11:0] t_mperiod_new = load ? s2_mperiod : s3_mperiod;
  function automatic reached_next(input [31:0] deadline);  // on the next cycle
    begin
      reached_next = tick_edge ? reached(now_tick1, deadline) : reached(now_tick, deadline);
    end
  endfunction
  // Completions are held after this edge: those issued behind stage 3 are squashed.
  wire squash = n_waiting_ci || n_resizing != 8'd0;

  // CQs in the wheel's lists (each is one insert, and leaves with its expiry).
  // Counted a cycle late (an insert and an expiry are registered first) so that the decision to
  // start a timer does not run on into an adder; o_timers adds the cycle's change back.
  reg [CQN_W:0] listed_count;
  reg           listed_in, listed_out;
  wire          expiring = advance && s3_kind == K_EXP;
  assign o_busy = s2_kind != K_NONE || s3_kind != K_NONE || rb_count != 3'd0 || m_dma_valid || m_event_valid ||
                  m_ci_req_valid || ins_valid || !wheel_idle;
  wire   listed_zero = listed_count == {(CQN_W + 1){1'b0}};
  wire   listed_one = listed_count == {{CQN_W{1'b0}}, 1'b1};
  assign o_timers = listed_in ? (!listed_out || !listed_zero) : listed_out ? !listed_one : !listed_zero;

  // Stage 3's time tests, for the cycle it acts on next.
  always @(posedge clk) begin
    s3_due <= load ? reached_next(y_period_end) : reached_next(x_period_end);
    s3_dl_passed <= load ? reached_next(y_dl) : reached_next(x_dl);
    s3_dl_now <= tick_edge ? now_tick1 + {20'd0, t_mperiod} : now_tick + {20'd0, t_mperiod};
    s3_dl_new <= tick_edge ? now_tick1 + {20'd0, t_mperiod_new} : now_tick + {20'd0, t_mperiod_new};
    s3_same_now <= load ? y_run && (tick_edge ? sum_is(now_tick1, y_mperiod, y_dl) : sum_is(now_tick, y_mperiod, y_dl))
                        : x_run && (tick_edge ? sum_is(now_tick1, x_mperiod, x_dl) : sum_is(now_tick, x_mperiod, x_dl));
  end

  // The replay buffer's counts with and without a retirement, summed before stage 3 decides.
  wire [2:0] issued_only = rb_issued + {2'd0, s1_kind == K_CPL};
  wire [2:0] issued_then_retired = issued_only - 3'd1;
  wire [2:0] count_same = rb_count + {2'd0, s_cpl_valid && s_cpl_ready};
  wire [2:0] count_less_one = count_same - 3'd1;

  // ---------------------------------------------------------------- registers
  always @(posedge clk) begin
    if (rst) begin
      s2_kind <= K_NONE;
      s3_kind <= K_NONE;
      wb_hit <= 1'b0;
      waiting_ci <= 1'b0;
      refreshed <= 1'b0;
      resizing <= 8'd0;
      rb_head <= 2'd0;
      rb_count <= 3'd0;
      rb_issued <= 3'd0;
      listed_count <= {(CQN_W + 1){1'b0}};
      listed_in <= 1'b0;
      listed_out <= 1'b0;
    end else begin
      listed_count <= listed_count + {{CQN_W{1'b0}}, listed_in} - {{CQN_W{1'b0}}, listed_out};
      listed_in <= ins_in_valid;
      listed_out <= expiring;
      if (advance) begin
        waiting_ci <= n_waiting_ci;
        refreshed <= n_refreshed;
        resizing <= n_resizing;
        wb_hit <= s3_writes && s3_cqn == (hazard ? s2_cqn : s1_cqn);
        wb_ctx <= n_ctx;
        if (hazard) begin
          s3_kind <= K_NONE;
          if (squash && s2_kind == K_CPL) s2_kind <= K_NONE;
        end else begin
          s3_kind <= (squash && s2_kind == K_CPL) ? K_NONE : s2_kind;
          s3_cqn <= s2_cqn;
          s3_in <= s2_cqn < NUM_CQS_24;
          s3_op <= s2_op; s3_log <= s2_log; s3_base <= s2_base; s3_dbr <= s2_dbr; s3_eqn <= s2_eqn;
          s3_mcount <= s2_mcount; s3_mperiod <= s2_mperiod; s3_flags <= s2_flags;
          s3_sn <= s2_sn; s3_cmd <= s2_cmd; s3_ci <= s2_ci; s3_ok <= s2_ok;
          s3_ctx <= s2_ctx;
          s3_ge <= y_ge;
          s3_gt <= y_size_zero ? y_newer != 24'd0 : y_ge && {1'b0, y_newer} != y_size;
          s3_ci_ge <= y_size_zero || (y_unread & ~y_mask) != 24'd0;
          s3_newer <= y_newer != 24'd0;
          s3_sol_newer <= y_last_sol != s2_ci && y_sol_no_later;
          s3_arm_pending <= !y_arm_to_next ? 16'd1 : y_newer[23:16] != 8'd0 ? 16'hFFFF : y_newer[15:0];
          s3_arm_count <= y_mcount != 16'd0 &&
                          (!y_arm_to_next ? y_mcount <= 16'd1 : y_newer[23:16] != 8'd0 || y_newer[15:0] >= y_mcount);
          s3_pi1 <= y_pi1;
          // pi + 1 - last_sol > size, the sum modulo 2^24 as the index is
          s3_sol_expire <= y_sol_age != 24'hFFFFFF && (y_size_zero || (y_sol_age & ~y_mask) != 24'd0);
          s3_owner <= (({1'b0, y_pi} >> y_log) & 25'd1) != 25'd0;
          s3_owner_wrap <= (y_pi & y_mask) == y_mask;
          s3_cqe_addr <= y_base + {34'd0, y_pi & y_mask, 6'd0};
          s3_pend_ge <= y_pending >= y_mcount;
          s3_pend1_ge <= {1'b0, y_pending} + 17'd1 >= {1'b0, y_mcount};
          s3_pend_ge_new <= y_pending >= s2_mcount;
          s3_pending1 <= y_pending + 16'd1;
          s3_same_then <= y_run && y_dl == y_period_end;
          s2_kind <= (squash && s1_kind == K_CPL) ? K_NONE : s1_kind;
          s2_cqn <= s1_cqn;
          s2_op <= s_ctl_op; s2_log <= s_ctl_log_size; s2_base <= s_ctl_base; s2_dbr <= s_ctl_dbr;
          s2_eqn <= s_ctl_eqn; s2_mcount <= s_ctl_mod_count; s2_mperiod <= s_ctl_mod_period;
          s2_flags <= {s_ctl_always_armed, s_ctl_overrun_ignore, s_ctl_period_mode};
          s2_sn <= s_arm_sn; s2_cmd <= s_arm_cmd;
          s2_ci <= s1_kind == K_CI ? s_ci_ci : s_arm_ci;
          s2_ok <= s_ci_ok;
        end
        if (squash) rb_issued <= 3'd0;
        else rb_issued <= (retire && s3_kind == K_CPL) ? issued_then_retired : issued_only;
      end
      // The replay buffer: the head leaves as stage 3 retires it, a record joins at the tail.
      if (retire) rb_head <= rb_head + 2'd1;
      rb_count <= retire ? count_less_one : count_same;
      if (s_cpl_valid && s_cpl_ready) begin
        rb_cqn[rb_tail] <= s_cpl_cqn;                 rb_is_send[rb_tail] <= s_cpl_is_send;
        rb_opcode[rb_tail] <= s_cpl_opcode;           rb_send_opcode[rb_tail] <= s_cpl_send_opcode;
        rb_syndrome[rb_tail] <= s_cpl_syndrome;       rb_vendor_syndrome[rb_tail] <= s_cpl_vendor_syndrome;
        rb_wr_id[rb_tail] <= s_cpl_wr_id;             rb_byte_cnt[rb_tail] <= s_cpl_byte_cnt;
        rb_imm_present[rb_tail] <= s_cpl_imm_present; rb_imm[rb_tail] <= s_cpl_imm;
        rb_qpn[rb_tail] <= s_cpl_qpn;                 rb_src_qpn[rb_tail] <= s_cpl_src_qpn;
        rb_slid[rb_tail] <= s_cpl_slid;               rb_sl[rb_tail] <= s_cpl_sl;
        rb_grh[rb_tail] <= s_cpl_grh;                 rb_pkey_index[rb_tail] <= s_cpl_pkey_index;
        rb_se[rb_tail] <= s_cpl_se;                   rb_wqe_counter[rb_tail] <= s_cpl_wqe_counter;
      end
    end
  end
endmodule

`default_nettype wire

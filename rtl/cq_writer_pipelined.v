// cq_writer_pipelined: the CQ writer as a pipeline a hardware team can take (docs/rtl.md, "The
// pipelined writer"), cycle for cycle the C++ model model/cq/cq_writer_pipeline.cpp. The rules of
// every action are the ones of rtl/cq_writer.v and model/cq/cq_writer_core.cpp; what differs is
// how the state is kept and when things happen:
//
//   stage 1  select one item in fixed priority (control, CQE-write failure, consumer-index
//            response, timer expiry, arm, completion); its CQN addresses the context RAM
//   stage 2  the context arrives from the RAM's output register; the context stage 3 writes on
//            this edge, or wrote on the edge that read the RAM, is taken instead (the bypass)
//   stage 3  act on one context; write it back; offer outputs to the skid buffers
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
  // {listed, tm_dl, tm_run, ts_mid, ts_tick, pending, arm_sn, any_sol, last_sol, last_notified,
  //  ci, pi, always, oi, period_mode, mod_period, mod_count, eqn, dbr, base, log_size, state, valid}
  localparam integer F_VALID = 0, F_STATE = 1, F_LOG = 4, F_BASE = 9, F_DBR = 73, F_EQN = 137, F_MCOUNT = 161,
                     F_MPERIOD = 177, F_PMODE = 189, F_OI = 190, F_ALWAYS = 191, F_PI = 192, F_CI = 216,
                     F_LASTN = 240, F_LASTS = 264, F_ANYS = 288, F_SN = 289, F_PEND = 291, F_TST = 307,
                     F_TSM = 339, F_RUN = 340, F_DL = 341, F_LISTED = 373, CTX_W = 374;

  // ---------------------------------------------------------------- time
  reg [PRESC_W-1:0] presc;
  reg [31:0]        now_tick;   // microseconds since reset
  always @(posedge clk) begin
    if (rst) begin
      presc <= {PRESC_W{1'b0}};
      now_tick <= 32'd0;
    end else begin
      if (presc == PRESC_LAST[PRESC_W-1:0]) begin
        presc <= {PRESC_W{1'b0}};
        now_tick <= now_tick + 32'd1;
      end else begin
        presc <= presc + 1'b1;
      end
    end
  end
  wire now_mid = presc != {PRESC_W{1'b0}};

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
  reg             wb_valid;                // the context written on the last advancing edge
  reg [23:0]      wb_cqn;
  reg [CTX_W-1:0] wb_ctx;

  // ---------------------------------------------------------------- stage 1: select
  wire advance = o_ready && dma_in_ready && ev_in_ready && cir_in_ready && ins_in_ready;
  reg  [2:0]  s1_kind;
  reg  [23:0] s1_cqn;
  always @(*) begin
    s1_kind = K_NONE;
    s1_cqn = 24'd0;
    if (advance) begin
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
  assign ram_re = advance;
  assign ram_raddr = s1_cqn[CQN_W-1:0];

  // ---------------------------------------------------------------- stage 3: act
  // The context, field by field (from s3_ctx), and its next value (n_*).
  wire        c_in = s3_cqn < NUM_CQS_24;
  reg         n_valid, n_pmode, n_oi, n_always, n_any_sol, n_ts_mid, n_run, n_listed;
  reg  [2:0]  n_state;
  reg  [4:0]  n_log;
  reg  [63:0] n_base, n_dbr;
  reg  [23:0] n_eqn, n_pi, n_ci, n_last_notified, n_last_sol;
  reg  [15:0] n_mcount, n_pending;
  reg  [11:0] n_mperiod;
  reg  [1:0]  n_sn;
  reg  [31:0] n_ts_tick, n_dl;
  reg         n_waiting_ci, n_refreshed;
  reg  [7:0]  n_resizing;
  reg         we, retire;

  reg         do_cpl, use_refresh, do_moderate, do_reeval, do_fire, do_err, armed_now, qual, nomod, sol;
  reg         start_timer, due;
  reg  [7:0]  err_syn;
  reg  [24:0] size;
  reg  [23:0] newer, dsol, mask24;
  reg  [31:0] dl;
  reg  [511:0] cqe;

  always @(*) begin
    n_valid = s3_ctx[F_VALID] && c_in;  n_state = s3_ctx[F_STATE +: 3];     n_log = s3_ctx[F_LOG +: 5];
    n_base = s3_ctx[F_BASE +: 64];       n_dbr = s3_ctx[F_DBR +: 64];         n_eqn = s3_ctx[F_EQN +: 24];
    n_mcount = s3_ctx[F_MCOUNT +: 16];   n_mperiod = s3_ctx[F_MPERIOD +: 12]; n_pmode = s3_ctx[F_PMODE];
    n_oi = s3_ctx[F_OI];                 n_always = s3_ctx[F_ALWAYS];         n_pi = s3_ctx[F_PI +: 24];
    n_ci = s3_ctx[F_CI +: 24];           n_last_notified = s3_ctx[F_LASTN +: 24];
    n_last_sol = s3_ctx[F_LASTS +: 24];  n_any_sol = s3_ctx[F_ANYS];          n_sn = s3_ctx[F_SN +: 2];
    n_pending = s3_ctx[F_PEND +: 16];    n_ts_tick = s3_ctx[F_TST +: 32];     n_ts_mid = s3_ctx[F_TSM];
    n_run = s3_ctx[F_RUN];               n_dl = s3_ctx[F_DL +: 32];           n_listed = s3_ctx[F_LISTED];
    n_waiting_ci = waiting_ci;
    n_refreshed = refreshed;
    n_resizing = resizing;
    we = 1'b0;
    retire = 1'b0;
    dma_in_valid = 1'b0; dma_in_data = 600'd0;
    ev_in_valid = 1'b0; ev_in_data = 128'd0;
    cir_in_valid = 1'b0; cir_in_data = 88'd0;
    ins_in_valid = 1'b0; ins_in_data = {(CQN_W + 14){1'b0}};
    o_ctl_done = 1'b0; o_bad_db_valid = 1'b0; o_bad_db_reason = 8'd0; o_bad_db_cqn = 24'd0;
    o_cov = 17'd0;
    do_cpl = 1'b0; use_refresh = 1'b0; do_moderate = 1'b0; do_reeval = 1'b0; do_fire = 1'b0; do_err = 1'b0;
    start_timer = 1'b0; due = 1'b0;
    err_syn = 8'd0; qual = 1'b0; nomod = 1'b0; newer = 24'd0; dsol = 24'd0; dl = 32'd0; cqe = 512'd0;
    armed_now = 1'b0;
    sol = (rb_syndrome[h] != 8'd0) || (!rb_is_send[h] && rb_se[h]);
    size = 25'd1 << n_log;
    mask24 = size[23:0] - 24'd1;

    if (advance) begin
      case (s3_kind)
        K_CTL: begin
          o_ctl_done = 1'b1;
          if (c_in) begin
            we = 1'b1;
            case (s3_op)
              CQ_CTL_CREATE: begin
                n_valid = 1'b1; n_log = s3_log; n_base = s3_base; n_dbr = s3_dbr; n_eqn = s3_eqn;
                n_mcount = s3_mcount; n_mperiod = s3_mperiod; n_pmode = s3_flags[0]; n_oi = s3_flags[1];
                n_always = s3_flags[2];
                n_state = s3_flags[2] ? CQ_STATE_ALWAYS_ARMED : CQ_STATE_DISARMED;
                n_pi = 24'd0; n_ci = 24'd0; n_last_notified = 24'd0; n_last_sol = 24'd0; n_any_sol = 1'b0;
                n_sn = 2'd0; n_pending = 16'd0; n_ts_tick = now_tick; n_ts_mid = now_mid; n_run = 1'b0;
                n_dl = 32'd0;  // n_listed stays: the wheel may still hold the CQN
              end
              CQ_CTL_MODIFY_MODERATION: begin
                n_mcount = s3_mcount; n_mperiod = s3_mperiod; n_pmode = s3_flags[0];
                n_run = 1'b0; n_ts_tick = now_tick; n_ts_mid = now_mid;
                do_reeval = 1'b1;
              end
              CQ_CTL_RESIZE_BEGIN: n_resizing = resizing + 8'd1;
              CQ_CTL_RESIZE_COMMIT: begin
                n_log = s3_log; n_base = s3_base;
                if (resizing != 8'd0) n_resizing = resizing - 8'd1;
              end
              CQ_CTL_RESIZE_ABORT: if (resizing != 8'd0) n_resizing = resizing - 8'd1;
              CQ_CTL_DESTROY: begin n_run = 1'b0; n_valid = 1'b0; end
              default: ;
            endcase
            size = 25'd1 << n_log;
            mask24 = size[23:0] - 24'd1;
          end
        end

        K_AERR: begin
          if (n_valid && n_state != CQ_STATE_ERROR) begin
            we = 1'b1; do_err = 1'b1; err_syn = CQ_ERROR_CQ_ACCESS_VIOLATION;
          end
        end

        K_CI: begin
          if (waiting_ci && rb_count != 3'd0 && rb_cqn[h] == s3_cqn && c_in) begin
            n_waiting_ci = 1'b0;
            if (n_valid) begin
              we = 1'b1;
              if (!s3_ok) begin
                do_err = 1'b1; err_syn = CQ_ERROR_CQ_ACCESS_VIOLATION; o_cov[COV_DROPPED] = 1'b1; retire = 1'b1;
              end else if ({1'b0, n_pi - s3_ci} > size) begin
                do_err = 1'b1; err_syn = CQ_ERROR_CQ_BAD_DOORBELL_RECORD; o_cov[COV_DROPPED] = 1'b1; retire = 1'b1;
              end else begin
                n_ci = s3_ci;
                n_refreshed = 1'b1;
                if (resizing == 8'd0) begin do_cpl = 1'b1; use_refresh = 1'b1; end
              end
            end
          end
        end

        K_EXP: begin
          we = 1'b1;
          n_listed = 1'b0;
          if (n_run) begin
            if ($signed(now_tick - n_dl) < 0) begin
              start_timer = 1'b1;                       // the deadline moved later: back into the wheel
            end else begin
              n_run = 1'b0;
              o_cov[COV_TIMER_EXPIRY] = 1'b1;
              armed_now = n_state == CQ_STATE_ARMED_NEXT || n_state == CQ_STATE_ARMED_SOLICITED ||
                          n_state == CQ_STATE_ALWAYS_ARMED;
              if (armed_now && n_pending != 16'd0) begin
                o_cov[COV_BY_PERIOD] = 1'b1; do_fire = 1'b1;
              end
            end
          end
        end

        K_ARM: begin
          o_cov[COV_ARM] = 1'b1;
          if (!n_valid) begin
            o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_UNKNOWN_OBJECT; o_bad_db_cqn = s3_cqn;
          end else if (n_state == CQ_STATE_ERROR) begin
            o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_OBJECT_IN_ERROR; o_bad_db_cqn = s3_cqn;
          end else if ({1'b0, n_pi - s3_ci} > size) begin
            o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_INDEX_OUT_OF_RANGE; o_bad_db_cqn = s3_cqn;
          end else if (s3_sn != n_sn) begin
            o_cov[COV_ARM_STALE] = 1'b1;
            o_bad_db_valid = 1'b1; o_bad_db_reason = DB_ERR_STALE_ARM_SN; o_bad_db_cqn = s3_cqn;
          end else if (n_state == CQ_STATE_ARMED_NEXT || n_state == CQ_STATE_ALWAYS_ARMED ||
                       (n_state == CQ_STATE_ARMED_SOLICITED && s3_cmd)) begin
            o_cov[COV_ARM_IGNORED] = 1'b1;             // S10
          end else begin
            we = 1'b1;
            if (n_state == CQ_STATE_ARMED_SOLICITED) begin
              n_state = CQ_STATE_ARMED_NEXT;           // S11
              o_cov[COV_ARM_UPGRADED] = 1'b1;
            end else begin
              n_state = s3_cmd ? CQ_STATE_ARMED_SOLICITED : CQ_STATE_ARMED_NEXT;
              n_pending = 16'd0;
            end
            newer = n_pi - s3_ci;
            dsol = n_last_sol - s3_ci;
            if (n_state == CQ_STATE_ARMED_NEXT ? (newer != 24'd0)
                                               : (n_any_sol && dsol != 24'd0 && dsol <= newer)) begin
              if (cfg_arm_at_once) begin
                o_cov[COV_AT_ARM] = 1'b1; do_fire = 1'b1;   // S9
              end else begin                                // S26
                o_cov[COV_ARM_OWED] = 1'b1; do_reeval = 1'b1;
                if (n_state != CQ_STATE_ARMED_NEXT) n_pending = 16'd1;
                else if (newer[23:16] != 8'd0) n_pending = 16'hFFFF;
                else n_pending = newer[15:0];
              end
            end
          end
        end

        K_CPL: begin
          do_cpl = 1'b1;
          use_refresh = refreshed;
        end

        default: ;
      endcase
    end

    // -------------------------------------------------------------- completion (the head record)
    if (do_cpl) begin
      n_refreshed = 1'b0;
      if (!n_valid) begin
        o_cov[COV_BAD_RECORD] = 1'b1; retire = 1'b1;
      end else if (n_state == CQ_STATE_ERROR) begin
        we = 1'b1; o_cov[COV_DROPPED] = 1'b1; retire = 1'b1;
      end else if (!n_oi && {1'b0, n_pi - n_ci} >= size) begin
        we = 1'b1;
        if (!use_refresh) begin                    // cached index says full: read the doorbell record
          cir_in_valid = 1'b1; cir_in_data = {rb_cqn[h], n_dbr};
          n_waiting_ci = 1'b1; o_cov[COV_CI_REFRESH] = 1'b1;
        end else begin                             // S14 overflow: not written
          o_cov[COV_OVERFLOW] = 1'b1; o_cov[COV_DROPPED] = 1'b1;
          do_err = 1'b1; err_syn = CQ_ERROR_CQ_OVERRUN; retire = 1'b1;
        end
      end else begin
        we = 1'b1;
        retire = 1'b1;
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
        cqe[`CQE_OWNER_LO +: `CQE_OWNER_W] = (({1'b0, n_pi} >> n_log) & 25'd1) != 25'd0;
        dma_in_valid = 1'b1;
        dma_in_data = {rb_cqn[h], n_base + {34'd0, n_pi & mask24, 6'd0}, cqe};
        o_cov[COV_CQE] = 1'b1;
        n_pi = n_pi + 24'd1;
        if ((n_pi & mask24) == 24'd0) o_cov[COV_OWNER_WRAP] = 1'b1;
        if (sol) begin
          n_last_sol = n_pi; n_any_sol = 1'b1;
        end else if (n_any_sol && {1'b0, n_pi - n_last_sol} > size) begin
          n_any_sol = 1'b0;
        end
        do_moderate = 1'b1;
      end
    end

    // -------------------------------------------------------------- moderation (S12, S26)
    armed_now = n_state == CQ_STATE_ARMED_NEXT || n_state == CQ_STATE_ARMED_SOLICITED || n_state == CQ_STATE_ALWAYS_ARMED;
    if (do_moderate) begin
      qual = (n_state == CQ_STATE_ARMED_SOLICITED) ? sol : armed_now;
      if (n_pmode && (qual || !cfg_arm_at_once)) begin n_ts_tick = now_tick; n_ts_mid = now_mid; end
      if (qual && n_pending != 16'hFFFF) n_pending = n_pending + 16'd1;
      do_reeval = 1'b1;
    end
    if (do_reeval && armed_now && n_pending != 16'd0) begin
      nomod = n_mcount == 16'd0 && n_mperiod == 12'd0;
      if (nomod) begin
        o_cov[COV_IMMEDIATE] = 1'b1; do_fire = 1'b1;
      end else if (n_mcount != 16'd0 && n_pending >= n_mcount) begin
        o_cov[COV_BY_COUNT] = 1'b1; do_fire = 1'b1;
      end else if (n_mperiod != 12'd0) begin
        // The first tick at or after the exact end of the period.
        dl = n_ts_tick + {20'd0, n_mperiod} + {31'd0, n_ts_mid};
        due = $signed(now_tick - dl) >= 0;
        if (due) begin
          o_cov[COV_BY_PERIOD] = 1'b1; do_fire = 1'b1;
        end else if (!n_run || n_dl != dl) begin
          n_run = 1'b1; n_dl = dl; start_timer = 1'b1;
        end
      end
    end
    if (start_timer && !n_listed) begin
      n_listed = 1'b1;
      ins_in_valid = 1'b1;
      ins_in_data = {s3_cqn[CQN_W-1:0], n_dl[13:0]};
    end

    // -------------------------------------------------------------- fire / error
    if (do_fire) begin
      ev_in_valid = 1'b1;
      ev_in_data = {EQE_TYPE_COMPLETION, n_eqn, s3_cqn, 8'd0, 40'd0, n_pi};
      o_cov[COV_EVENT] = 1'b1;
      if (n_state != CQ_STATE_ALWAYS_ARMED) n_state = CQ_STATE_DISARMED;
      n_pending = 16'd0;
      n_last_notified = n_pi;
      n_ts_tick = now_tick; n_ts_mid = now_mid;
      n_sn = n_sn + 2'd1;
      n_run = 1'b0;
    end
    if (do_err) begin
      n_state = CQ_STATE_ERROR;
      n_run = 1'b0;
      ev_in_valid = 1'b1;
      ev_in_data = {EQE_TYPE_CQ_ERROR, 24'd0, s3_cqn, err_syn, 40'd0, n_pi};
    end

    n_ctx = {n_listed, n_dl, n_run, n_ts_mid, n_ts_tick, n_pending, n_sn, n_any_sol, n_last_sol, n_last_notified,
             n_ci, n_pi, n_always, n_oi, n_pmode, n_mperiod, n_mcount, n_eqn, n_dbr, n_base, n_log, n_state, n_valid};
  end

  assign ram_we = advance && we && c_in;
  assign o_cov_cqn = s3_cqn;
  assign ram_waddr = s3_cqn[CQN_W-1:0];

  // ---------------------------------------------------------------- stage 2: the context, bypassed
  wire            s3_writes = ram_we;
  wire [CTX_W-1:0] s2_ctx = (s3_writes && s3_cqn == s2_cqn) ? n_ctx :
                            (wb_valid && wb_cqn == s2_cqn) ? wb_ctx : ram_rdata;
  // Completions are held after this edge: those issued behind stage 3 are squashed.
  wire squash = n_waiting_ci || n_resizing != 8'd0;

  // CQs in the wheel's lists (each is one insert, and leaves with its expiry).
  reg [CQN_W:0] listed_count;
  wire          expiring = advance && s3_kind == K_EXP;
  assign o_busy = s2_kind != K_NONE || s3_kind != K_NONE || rb_count != 3'd0 || m_dma_valid || m_event_valid ||
                  m_ci_req_valid || ins_valid || !wheel_idle;
  assign o_timers = listed_count != {(CQN_W + 1){1'b0}};

  // ---------------------------------------------------------------- registers
  always @(posedge clk) begin
    if (rst) begin
      s2_kind <= K_NONE;
      s3_kind <= K_NONE;
      wb_valid <= 1'b0;
      waiting_ci <= 1'b0;
      refreshed <= 1'b0;
      resizing <= 8'd0;
      rb_head <= 2'd0;
      rb_count <= 3'd0;
      rb_issued <= 3'd0;
      listed_count <= {(CQN_W + 1){1'b0}};
    end else begin
      listed_count <= listed_count + {{CQN_W{1'b0}}, ins_in_valid} - {{CQN_W{1'b0}}, expiring};
      if (advance) begin
        waiting_ci <= n_waiting_ci;
        refreshed <= n_refreshed;
        resizing <= n_resizing;
        wb_valid <= s3_writes;
        wb_cqn <= s3_cqn;
        wb_ctx <= n_ctx;
        s3_kind <= (squash && s2_kind == K_CPL) ? K_NONE : s2_kind;
        s3_cqn <= s2_cqn;
        s3_op <= s2_op; s3_log <= s2_log; s3_base <= s2_base; s3_dbr <= s2_dbr; s3_eqn <= s2_eqn;
        s3_mcount <= s2_mcount; s3_mperiod <= s2_mperiod; s3_flags <= s2_flags;
        s3_sn <= s2_sn; s3_cmd <= s2_cmd; s3_ci <= s2_ci; s3_ok <= s2_ok;
        s3_ctx <= s2_ctx;
        s2_kind <= (squash && s1_kind == K_CPL) ? K_NONE : s1_kind;
        s2_cqn <= s1_cqn;
        s2_op <= s_ctl_op; s2_log <= s_ctl_log_size; s2_base <= s_ctl_base; s2_dbr <= s_ctl_dbr;
        s2_eqn <= s_ctl_eqn; s2_mcount <= s_ctl_mod_count; s2_mperiod <= s_ctl_mod_period;
        s2_flags <= {s_ctl_always_armed, s_ctl_overrun_ignore, s_ctl_period_mode};
        s2_sn <= s_arm_sn; s2_cmd <= s_arm_cmd;
        s2_ci <= s1_kind == K_CI ? s_ci_ci : s_arm_ci;
        s2_ok <= s_ci_ok;
        if (squash) rb_issued <= 3'd0;
        else rb_issued <= rb_issued + {2'd0, s1_kind == K_CPL} - {2'd0, retire && s3_kind == K_CPL};
      end
      // The replay buffer: the head leaves as stage 3 retires it, a record joins at the tail.
      if (retire) rb_head <= rb_head + 2'd1;
      rb_count <= rb_count - {2'd0, retire} + {2'd0, s_cpl_valid && s_cpl_ready};
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

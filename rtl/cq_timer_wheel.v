// cq_timer_wheel: the pipelined CQ writer's moderation timers, a timing wheel in RAM (docs/rtl.md,
// "The pipelined writer"). Nothing in it compares across CQs: a running timer is one entry in one
// of 8,192 slot lists (a head per slot, a next pointer per CQ, both RAMs), walked when its tick
// comes.
//
// Time: a tick every CYCLES_PER_US cycles (one microsecond), counted in o_now (14 bits, modulo
// 16,384). Tick n begins on the cycle after the edge that counts it.
//
// Insert (s_ins: a CQN and its deadline tick): the CQ joins the front of slot deadline mod 8,192,
// three edges after it is taken (place the slot, read its head, link).
// The writer inserts deadlines in (now, now + 4,096]; one outside (now, now + 8,192) is due or
// unplaceable: it joins the next tick's slot instead (it fires as soon as possible) and pulses
// o_late, which the writer counts. A CQ is in at most one list: the writer inserts a CQ only when
// its timer is not already running, and lets an expiry that came too early (its deadline moved
// later) re-insert it.
//
// Walk: once tick n has begun, slot n mod 8,192 is detached (its head read and cleared in one
// cycle) and its CQs are offered on m_exp, most recently inserted first, one every two cycles at
// best (offer, then the read of its next pointer). Slots are detached in tick order, each after the
// previous walk ended; a walk that runs past the next tick delays that tick's walk, never loses it.
//
// Streams: m_exp's valid and data come from registers; s_ins_ready comes from registers only.
// After rst the head RAM is cleared by its sweep (8,192 cycles, o_ready low, no insert taken).
`default_nettype none

module cq_timer_wheel #(
    parameter integer NUM_CQS = 64,
    parameter integer CYCLES_PER_US = 500,
    parameter integer CQN_WIDTH = NUM_CQS > 1 ? $clog2(NUM_CQS) : 1
) (
    input  wire                 clk,
    input  wire                 rst,
    output wire                 o_ready,
    output reg  [13:0]          o_now,
    output reg                  o_late,
    // Nothing to do until the next tick: swept, no insert in flight, every begun tick walked
    // (registers only; the writer's clock may stop meanwhile, time being counted on its return).
    output wire                 o_idle,

    input  wire                 s_ins_valid,
    output wire                 s_ins_ready,
    input  wire [CQN_WIDTH-1:0] s_ins_cqn,
    input  wire [13:0]          s_ins_deadline,

    output reg                  m_exp_valid,
    input  wire                 m_exp_ready,
    output reg  [CQN_WIDTH-1:0] m_exp_cqn,
    output reg  [13:0]          m_exp_tick
);
  localparam integer SLOT_BITS = 13;
  localparam integer PRESC_BITS = CYCLES_PER_US > 1 ? $clog2(CYCLES_PER_US) : 1;
  localparam integer PRESC_LAST = CYCLES_PER_US - 1;
  localparam integer ENTRY = CQN_WIDTH + 1;  // a list pointer: valid bit and CQN

  // ---- time ----
  reg [PRESC_BITS-1:0] presc;
  always @(posedge clk) begin
    if (rst) begin
      presc <= {PRESC_BITS{1'b0}};
      o_now <= 14'd0;
    end else if (tick) begin
      presc <= {PRESC_BITS{1'b0}};
      o_now <= o_now + 14'd1;
    end else begin
      presc <= presc + 1'b1;
    end
  end

  // ---- the RAMs ----
  wire                 heads_ready;
  reg                  head_re, head_we;
  reg  [SLOT_BITS-1:0] head_raddr, head_waddr;
  reg  [ENTRY-1:0]     head_wdata;
  wire [ENTRY-1:0]     head_rdata;
  cq_context_table #(.DEPTH(1 << SLOT_BITS), .WIDTH(ENTRY)) heads (
      .clk(clk), .rst(rst), .o_ready(heads_ready),
      .i_re(head_re), .i_raddr(head_raddr), .o_rdata(head_rdata),
      .i_we(head_we), .i_waddr(head_waddr), .i_wdata(head_wdata));

  reg                  next_re;
  reg  [CQN_WIDTH-1:0] next_raddr;
  wire [ENTRY-1:0]     next_rdata;
  reg                  next_we;
  reg  [CQN_WIDTH-1:0] next_waddr;
  reg  [ENTRY-1:0]     next_wdata;
  ram_1w1r #(.DEPTH(NUM_CQS), .WIDTH(ENTRY), .ADDR_WIDTH(CQN_WIDTH)) nexts (
      .clk(clk), .we(next_we), .waddr(next_waddr), .wdata(next_wdata),
      .re(next_re), .raddr(next_raddr), .rdata(next_rdata));

  assign o_ready = heads_ready;

  // ---- walk state ----
  reg [13:0]          detach_tick;  // the next tick whose slot is detached
  reg [13:0]          now_next;     // o_now + 1: detach_tick reaches it when every begun tick is detached
  reg                 detaching;    // a detach read is in flight: its head arrives this cycle
  reg                 following;    // a next-pointer read is in flight: it arrives this cycle
  wire                walk_busy = m_exp_valid || detaching || following;
  wire                tick_due = detach_tick != now_next;
  wire                tick = presc == PRESC_LAST[PRESC_BITS-1:0];

  // ---- insert pipeline: stage 0 places the deadline in a slot, stage 1 reads the slot's head,
  // stage 2 links the CQ in front of it ----
  reg                 ins0_valid;
  reg [CQN_WIDTH-1:0] ins0_cqn;
  reg [SLOT_BITS-1:0] ins0_slot;
  reg                 ins1_valid;
  reg [CQN_WIDTH-1:0] ins1_cqn;
  reg [SLOT_BITS-1:0] ins1_slot;
  reg                 wrote_valid;  // stage 2 wrote a head on the last edge (the bypass)
  reg [SLOT_BITS-1:0] wrote_slot;
  reg [CQN_WIDTH-1:0] wrote_cqn;

  // A detach uses both head ports in one cycle: only when no insert is in stages 0 and 1 (which
  // read and write a head); while one is wanted no insert is taken, so the stages drain.
  wire detach_go = heads_ready && !walk_busy && tick_due && !ins0_valid && !ins1_valid;
  assign s_ins_ready = heads_ready && !(!walk_busy && tick_due);
  assign o_idle = heads_ready && !walk_busy && !ins0_valid && !ins1_valid && !tick_due;

  wire [13:0] ahead = s_ins_deadline - o_now;
  wire        placeable = ahead != 14'd0 && ahead < 14'h2000;
  wire [SLOT_BITS-1:0] ins_slot = placeable ? s_ins_deadline[SLOT_BITS-1:0] : o_now[SLOT_BITS-1:0] + 1'b1;
  wire        take_ins = s_ins_valid && s_ins_ready;
  wire [ENTRY-1:0] old_head = wrote_valid && wrote_slot == ins1_slot ? {1'b1, wrote_cqn} : head_rdata;

  always @(*) begin
    head_re = 1'b0;
    head_raddr = ins0_slot;
    head_we = 1'b0;
    head_waddr = ins1_slot;
    head_wdata = {1'b1, ins1_cqn};
    next_we = ins1_valid;
    next_waddr = ins1_cqn;
    next_wdata = old_head;
    if (detach_go) begin
      head_re = 1'b1;
      head_raddr = detach_tick[SLOT_BITS-1:0];
      head_we = 1'b1;
      head_waddr = detach_tick[SLOT_BITS-1:0];
      head_wdata = {ENTRY{1'b0}};
    end else begin
      head_re = ins0_valid;
      head_we = ins1_valid;
    end
  end

  // The next pointer of the CQ being offered is read as the offer is taken.
  always @(*) begin
    next_re = m_exp_valid && m_exp_ready;
    next_raddr = m_exp_cqn;
  end

  always @(posedge clk) begin
    if (rst) begin
      ins0_valid <= 1'b0;
      ins1_valid <= 1'b0;
      wrote_valid <= 1'b0;
      detach_tick <= 14'd1;
      now_next <= 14'd1;
      detaching <= 1'b0;
      following <= 1'b0;
      m_exp_valid <= 1'b0;
      o_late <= 1'b0;
    end else begin
      o_late <= take_ins && !placeable;
      ins0_valid <= take_ins;
      if (take_ins) begin
        ins0_cqn <= s_ins_cqn;
        ins0_slot <= ins_slot;
      end
      ins1_valid <= ins0_valid;
      ins1_cqn <= ins0_cqn;
      ins1_slot <= ins0_slot;
      wrote_valid <= ins1_valid;
      wrote_slot <= ins1_slot;
      wrote_cqn <= ins1_cqn;

      detaching <= detach_go;
      if (detach_go) detach_tick <= detach_tick + 14'd1;
      if (tick) now_next <= now_next + 14'd1;
      following <= m_exp_valid && m_exp_ready;
      if (detaching) begin
        m_exp_valid <= head_rdata[ENTRY-1];
        m_exp_cqn <= head_rdata[CQN_WIDTH-1:0];
        m_exp_tick <= detach_tick - 14'd1;
      end else if (following) begin
        m_exp_valid <= next_rdata[ENTRY-1];
        m_exp_cqn <= next_rdata[CQN_WIDTH-1:0];
      end else if (m_exp_valid && m_exp_ready) begin
        m_exp_valid <= 1'b0;
      end
    end
  end
endmodule

`default_nettype wire

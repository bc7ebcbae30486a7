// cq_context_table: the CQ writer's context table (one entry of WIDTH bits per CQ) in RAM, with
// the clearing sweep that replaces a reset loop over the table.
//
// After rst the table writes zero to every entry, one per cycle, and holds o_ready low until the
// last one is written: DEPTH cycles, as hardware clears a RAM (a RAM has no reset; a loop over
// the table in a reset branch is table-wide logic that cannot become a RAM, and above 64
// entries it fails the BLKLOOPINIT check of Verilator). Entry 0 is written on the first edge
// after rst falls, entry DEPTH - 1 on the DEPTH-th, and o_ready is high from the next cycle on.
//
// Ports (once o_ready): a registered read (raddr on cycle t, rdata on t + 1) and a write, both
// every cycle; a read of the entry written on the same edge returns the old value (ram_1w1r): the
// CQ writer's pipeline bypasses back-to-back operations on one CQ itself. While the sweep runs,
// writes are ignored and rdata is not meaningful.
`default_nettype none

module cq_context_table #(
    parameter integer DEPTH = 64,
    parameter integer WIDTH = 64,
    parameter integer ADDR_WIDTH = DEPTH > 1 ? $clog2(DEPTH) : 1
) (
    input  wire                  clk,
    input  wire                  rst,
    output wire                  o_ready,        // the sweep is done: the ports may be used

    input  wire                  i_re,
    input  wire [ADDR_WIDTH-1:0] i_raddr,
    output wire [WIDTH-1:0]      o_rdata,

    input  wire                  i_we,
    input  wire [ADDR_WIDTH-1:0] i_waddr,
    input  wire [WIDTH-1:0]      i_wdata
);
  localparam integer LAST = DEPTH - 1;

  reg                  sweeping;
  reg [ADDR_WIDTH-1:0] sweep_addr;

  always @(posedge clk) begin
    if (rst) begin
      sweeping <= 1'b1;
      sweep_addr <= {ADDR_WIDTH{1'b0}};
    end else if (sweeping) begin
      if (sweep_addr == LAST[ADDR_WIDTH-1:0]) sweeping <= 1'b0;
      else sweep_addr <= sweep_addr + 1'b1;
    end
  end

  assign o_ready = !sweeping && !rst;

  ram_1w1r #(
      .DEPTH(DEPTH),
      .WIDTH(WIDTH),
      .ADDR_WIDTH(ADDR_WIDTH)
  ) ram (
      .clk(clk),
      .we(sweeping ? !rst : i_we),
      .waddr(sweeping ? sweep_addr : i_waddr),
      .wdata(sweeping ? {WIDTH{1'b0}} : i_wdata),
      .re(i_re),
      .raddr(i_raddr),
      .rdata(o_rdata)
  );
endmodule

`default_nettype wire

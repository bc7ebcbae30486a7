// ram_1w1r: a simple dual-port RAM, one write port and one read port on one clock, the read
// registered (the data of the address presented on cycle t is on rdata on cycle t + 1). Written
// the way synthesis tools infer block RAM (FPGA) or an SRAM macro (ASIC) from: no reset of the
// array (a RAM has none: whoever owns it clears it by writing), no read enable logic beyond the
// output register, one write per cycle.
//
// A read of the address written on the same edge returns the OLD data (read-before-write), the
// behaviour every RAM family offers; a pipeline that needs the new data bypasses it itself.
`default_nettype none

module ram_1w1r #(
    parameter integer DEPTH = 64,
    parameter integer WIDTH = 32,
    parameter integer ADDR_WIDTH = DEPTH > 1 ? $clog2(DEPTH) : 1
) (
    input  wire                  clk,
    input  wire                  we,
    input  wire [ADDR_WIDTH-1:0] waddr,
    input  wire [WIDTH-1:0]      wdata,
    input  wire                  re,
    input  wire [ADDR_WIDTH-1:0] raddr,
    output reg  [WIDTH-1:0]      rdata
);
  reg [WIDTH-1:0] mem [0:DEPTH-1] /*verilator public_flat_rd*/;  // read by verification backdoors

  always @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
  end

  always @(posedge clk) begin
    if (re) rdata <= mem[raddr];
  end
endmodule

`default_nettype wire

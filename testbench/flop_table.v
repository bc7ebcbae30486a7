// flop_table: the table style an RTL review refuses, kept as the case rtl/synth.sh must catch
// (ctest rtl_synth_catches_flop_table): every entry cleared by a loop in the reset branch and
// read combinationally, so no memory with registered reads can be inferred.
`default_nettype none

module flop_table #(
    parameter integer DEPTH = 16,
    parameter integer WIDTH = 32
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire                     we,
    input  wire [$clog2(DEPTH)-1:0] waddr,
    input  wire [WIDTH-1:0]         wdata,
    input  wire [$clog2(DEPTH)-1:0] raddr,
    output wire [WIDTH-1:0]         rdata
);
  reg [WIDTH-1:0] t [0:DEPTH-1];
  integer k;
  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < DEPTH; k = k + 1) t[k] <= {WIDTH{1'b0}};
    end else if (we) begin
      t[waddr] <= wdata;
    end
  end
  assign rdata = t[raddr];
endmodule

`default_nettype wire

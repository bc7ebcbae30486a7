// serial_adders: logic an RTL review sends back for depth, kept as the case rtl/synth.sh
// --max-levels must catch (ctest rtl_synth_catches_deep_path): three 32-bit additions in series
// between two registers.
`default_nettype none

module serial_adders (
    input  wire        clk,
    input  wire [31:0] a,
    input  wire [31:0] b,
    input  wire [31:0] c,
    input  wire [31:0] d,
    output reg  [31:0] y
);
  reg [31:0] ra, rb, rc, rd;
  always @(posedge clk) begin
    ra <= a; rb <= b; rc <= c; rd <= d;
    y <= ((((ra + rb) ^ rc) + rd) ^ ra) + rb;  // the XORs keep them three carry chains
  end
endmodule

`default_nettype wire

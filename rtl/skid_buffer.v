// skid_buffer: a register slice for a valid/ready stream that keeps full throughput and cuts every
// combinational path between its sides (AXI-Stream rules: m_valid and m_data come from registers
// and never depend on m_ready; s_ready comes from a register and never depends on m_ready or
// s_valid). The pipelined CQ writer puts one on every stream it drives or takes.
//
// Two entries: the output register, and the skid register that catches the item accepted in the
// cycle the output stalled (s_ready is registered, so the producer learns of the stall a cycle
// late). An item taken on edge t is on m_* from t + 1; with m_ready high throughout, one item
// passes every cycle.
`default_nettype none

module skid_buffer #(
    parameter integer WIDTH = 32
) (
    input  wire             clk,
    input  wire             rst,

    input  wire             s_valid,
    output wire             s_ready,
    input  wire [WIDTH-1:0] s_data,

    output wire             m_valid,
    input  wire             m_ready,
    output wire [WIDTH-1:0] m_data
);
  reg             out_valid;
  reg [WIDTH-1:0] out_data;
  reg             skid_valid;
  reg [WIDTH-1:0] skid_data;

  assign s_ready = !skid_valid;
  assign m_valid = out_valid;
  assign m_data = out_data;

  wire take = s_valid && !skid_valid;
  wire out_free = !out_valid || m_ready;  // the output register is empty or empties on this edge

  always @(posedge clk) begin
    if (rst) begin
      out_valid <= 1'b0;
      skid_valid <= 1'b0;
    end else if (out_free) begin
      // The skid's item goes first; with the skid full nothing was taken this cycle.
      out_valid <= skid_valid || take;
      skid_valid <= 1'b0;
    end else if (take) begin
      skid_valid <= 1'b1;  // the output is stalled: the item just accepted waits here
    end
  end

  // Data registers without reset: they are read only while their valid bit is set.
  always @(posedge clk) begin
    if (out_free) out_data <= skid_valid ? skid_data : s_data;
    if (!out_free && take) skid_data <= s_data;
  end
endmodule

`default_nettype wire

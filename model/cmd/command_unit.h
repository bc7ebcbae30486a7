// The command unit: the device firmware. On a command doorbell it DMA-reads the 128-byte command
// block, executes after the firmware latency, and writes status, syndrome, outputs and the cleared
// ownership bit back in one 64-byte write (plus a command-completion EQE when an EQ takes them).
// Every field is validated; a bad command gets a status and a syndrome naming the field.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <systemc>
#include <vector>

#include "model/cmd/commands.h"
#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/cq/cqe_writer.h"
#include "model/dma/dma_engine.h"
#include "model/eq/eq_engine.h"
#include "model/qp/qp_table.h"
#include "model/regs/register_file.h"

namespace vhca {

struct CommandUnitConfig {
  // Firmware execution time of one command. Real HCAs take tens of microseconds; 2 us keeps boot
  // short in simulated time while keeping commands far slower than the data path.
  sc_core::sc_time latency{2, sc_core::SC_US};
};

class CommandUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CommandUnit);
  CommandUnit(const sc_core::sc_module_name& name, const SimClock& clock, const CommandUnitConfig& cfg,
              CqeWriter& cq, EqEngine& eq, DmaEngine& dma, RegisterFile& regs, QpTables& qp_tables);

  // Control ops to the CQ writer, and events (command done, DMA error) to the EQ engine; a full
  // stream holds the firmware thread, nothing is dropped.
  StreamOut<CqControl> m_ctl{"m_ctl"};
  StreamOut<DeviceEvent> m_event{"m_event"};
  StreamOut<DmaWrite> m_dma{"m_dma"};  // command replies and resize copies (holds the firmware thread)

  void ring();  // the CMD_DOORBELL register was written
  void reset();
  bool initialized() const { return initialized_; }
  // Serving a command: only then does the firmware push writes (its reply, resize copies), and a
  // command's first push comes cycles after its doorbell (the block's read).
  bool busy() const { return busy_; }
  uint64_t executed() const { return executed_; }
  uint64_t refused() const { return refused_; }
  const QpTables& qp_tables() const { return qp_; }
  // Told after a QP changed state, was created (RESET) or destroyed (RESET, no longer valid),
  // and with UINT32_MAX when every QP was cleared (teardown).
  Observers<uint32_t, QpState, QpState> on_qp_state;  // (QPN, from, to)
  // Told after an SRQ was created or destroyed (reset: true) or armed (reset: false).
  Observers<uint32_t, bool> on_srq;  // (SRQN, reset)

 private:
  using In = std::array<uint32_t, cmdblk::kInputDwords>;
  using Out = std::array<uint32_t, cmdblk::kOutputDwords>;
  struct Result {
    uint8_t status = cmd::kOk;
    uint8_t dword = cmd::kFieldNone;
    uint8_t reason = 0;
  };
  static Result fail(uint8_t status, uint8_t dword, uint8_t reason) { return Result{status, dword, reason}; }
  uint32_t lowest_free_cqn() const;
  void take_cqn(uint32_t cqn);
  void release_cqn(uint32_t cqn);
  void release_all_cqns();
  uint32_t next_cqn_ = 1;              // the lowest CQN never handed out since the last reset
  std::set<uint32_t> freed_cqns_;      // destroyed CQNs below it

  void run();
  void block_arrived(bool ok, uint64_t usable);
  sc_core::sc_time to_edge(const sc_core::sc_time& after) const;  // from now to the first edge at or after now + after
  Result execute(uint16_t opcode, const In& in, Out& out);
  Result check_reserved(const cmd::CommandSpec& spec, const In& in) const;
  Result query_cap(Out& out);
  Result create_eq(const In& in, Out& out);
  Result destroy_eq(const In& in);
  Result query_eq(const In& in, Out& out);
  Result create_cq(const In& in, Out& out);
  Result destroy_cq(const In& in);
  Result query_cq(const In& in, Out& out);
  Result modify_cq(const In& in, Out& out);
  Result resize_cq(uint32_t cqn, const In& in);
  Result alloc_pd(Out& out);
  Result dealloc_pd(const In& in);
  Result reg_mr(const In& in, Out& out);
  Result dereg_mr(const In& in);
  Result create_qp(const In& in, Out& out);
  Result modify_qp(const In& in);
  Result query_qp(const In& in, Out& out);
  Result destroy_qp(const In& in);
  Result create_srq(const In& in, Out& out);
  Result destroy_srq(const In& in);
  Result query_srq(const In& in, Out& out);
  Result arm_srq(const In& in);
  void cq_control(const CqControl& c);
  void set_initialized(bool on);

  const SimClock& clock_;
  CommandUnitConfig cfg_;
  CqeWriter& cq_;
  EqEngine& eq_;
  DmaEngine& dma_;
  RegisterFile& regs_;
  RegisterRef cmdq_addr_hi_, cmdq_addr_lo_;  // read per command: resolved once, not by name
  sc_core::sc_event control_done_;
  std::array<uint8_t, cmdblk::kSize> block_{};  // the command block being executed
  uint64_t block_addr_ = 0;                     // its address (CMDQ_ADDR when its doorbell came)
  sc_core::sc_event fetched_;                   // it arrived (and, owned, the latency passed)
  bool fetched_ok_ = false;
  QpTables& qp_;
  bool busy_ = false;
  bool initialized_ = false;
  uint64_t executed_ = 0, refused_ = 0;
};

}  // namespace vhca

// The CQ writer block: a SystemC wrapper that runs a CqWriterEngine — the C++ model
// (CqWriterCore) or the Verilated RTL — one action per cycle, only on cycles where it can act.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <systemc>

#include "model/common/observers.h"
#include "model/common/sim_clock.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_writer_engine.h"

namespace vhca {

class CqeWriter : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CqeWriter);
  // Without an engine, the C++ model is used.
  CqeWriter(const sc_core::sc_module_name& name, const SimClock& clock, const CqeWriterConfig& cfg = {},
            std::unique_ptr<CqWriterEngine> engine = nullptr);

  CqWriterEngine& engine() { return *engine_; }
  // Queries see every act of the cycles begun so far, the ones the engine runs late included.
  CqContext context(uint32_t cqn) const {
    settle_for_query();
    return engine_->context(cqn);
  }
  bool cq_exists(uint32_t cqn) const {
    settle_for_query();
    return engine_->cq_exists(cqn);
  }
  const CqeWriterConfig& config() const { return engine_->config(); }
  const CqeWriterStats& stats() const {
    settle_for_query();
    return engine_->stats();
  }
  uint64_t activations() const { return wakeup_.activations(); }
  // It may still act, and push, on this cycle (Wakeup::may_act_now): its pushes happen only in its
  // own activation, and nothing wakes it for the cycle it is on (inputs and freed outputs wake it
  // for the next). The DMA engine's rank guard for CQEs.
  bool may_act_now() const { return wakeup_.may_act_now(); }
  // The engine starts counting cycles on the reset cycle: the pipelined writer's clearing sweep
  // runs from the reset, as the hardware's does, not from the first item that reaches it.
  void reset() {
    engine_->reset();
    wakeup_.wake(clock_.now());
  }
  // Observation (waveforms): told of each cycle on which the engine acted, after it acted.
  Observers<uint64_t> on_acted;

 private:
  void step();
  void end_of_elaboration() override;
  void settle_for_query() const { engine_->settle_for_query(clock_.now()); }

  const SimClock& clock_;
  std::unique_ptr<CqWriterEngine> engine_;
  Wakeup wakeup_;

 public:
  // The engine's streams, exported under the names the rest of the HCA binds to.
  StreamIn<CompletionRecord> s_cpl{"s_cpl"};
  StreamIn<ArmRequest> s_arm{"s_arm"};
  StreamIn<CqControl> s_ctl{"s_ctl"};
  StreamIn<CiResponse> s_ci{"s_ci"};
  StreamIn<uint32_t> s_access_error{"s_access_error"};
  StreamOut<DmaWrite> m_dma{"m_dma"};
  StreamOut<DeviceEvent> m_event{"m_event"};
  StreamOut<CiRequest> m_ci_req{"m_ci_req"};
  Observers<uint8_t, uint32_t>& on_bad_doorbell;  // (reason, CQN)
  Observers<const CqControl&, uint64_t>& on_control_done;  // (op, cycle)
};

}  // namespace vhca

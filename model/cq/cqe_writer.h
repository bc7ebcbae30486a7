// The CQ writer block: a SystemC wrapper that runs a CqWriterEngine — the C++ model
// (CqWriterCore) or the Verilated RTL — one action per cycle, only on cycles where it can act.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <systemc>

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
  void bind_outputs(Stream<DmaWrite>& dma, Stream<DeviceEvent>& events, Stream<CiRequest>& ci_req);

  CqWriterEngine& engine() { return *engine_; }
  const CqContext& context(uint32_t cqn) const { return engine_->context(cqn); }
  bool cq_exists(uint32_t cqn) const { return engine_->cq_exists(cqn); }
  const CqeWriterConfig& config() const { return engine_->config(); }
  const CqeWriterStats& stats() const { return engine_->stats(); }
  uint64_t activations() const { return wakeup_.activations(); }
  void reset() { engine_->reset(); }
  // Observation (waveforms): told of each cycle on which the engine acted, after it acted.
  std::function<void(uint64_t cycle)> on_acted;

 private:
  void step();

  const SimClock& clock_;
  std::unique_ptr<CqWriterEngine> engine_;
  Wakeup wakeup_;

 public:
  // The engine's ports, under the names the rest of the HCA uses.
  Stream<CompletionRecord>& s_cpl;
  Stream<ArmRequest>& s_arm;
  Stream<CqControl>& s_ctl;
  Stream<CiResponse>& s_ci;
  Stream<uint32_t>& s_access_error;
  std::function<void(uint8_t reason, uint32_t cqn)>& on_bad_doorbell;
  std::function<void(const CqControl&, uint64_t cycle)>& on_control_done;
};

}  // namespace vhca

// The EQ engine: EQ context table, EQE writer with owner bits, EQ doorbells (with and without
// re-arm), arm-once interrupts. Completion events go to the CQ's EQ, asynchronous events to the
// EQ created with the async mask, command completions to the EQ created with the command mask.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <systemc>
#include <vector>

#include "model/common/sim_clock.h"
#include "model/common/observers.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"

namespace vhca {

constexpr uint32_t kEqMaskCompletion = 1u << 0, kEqMaskAsync = 1u << 1, kEqMaskCommand = 1u << 2;

struct EqConfig {
  uint8_t log_size = 0;
  uint64_t base = 0;
  uint32_t vector = 0;
  uint32_t event_mask = kEqMaskCompletion;
};

struct EqContext {
  bool valid = false;
  EqConfig cfg;
  uint32_t pi = 0, ci = 0;
  bool armed = false;
  uint64_t eqes = 0, overruns = 0, interrupts = 0;
  uint32_t size() const { return 1u << cfg.log_size; }
};

struct EqDoorbell {
  uint32_t eqn = 0;
  uint32_t ci = 0;
  bool arm = false;
};

struct EqEngineConfig {
  uint32_t num_eqs = 64;
  uint8_t log_max_eq_size = 16;
  size_t event_depth = 16;     // s_event: completion, async and command events (assumption)
  size_t doorbell_depth = 16;  // s_db: arm and update doorbells (assumption)
  size_t report_depth = 16;    // reports from sources that cannot wait; more are counted in LOST_EVENTS (assumption)
};

class EqEngine : public sc_core::sc_module {
 public:
  StreamIn<DeviceEvent> s_event;  // completion, async and command events from every block
  StreamIn<EqDoorbell> s_db;
  StreamOut<DmaWrite> m_dma{"m_dma"};
  StreamOut<uint32_t> m_irq{"m_irq"};  // MSI-X vector requests

  Observers<uint8_t, uint32_t> on_bad_doorbell;  // (reason, EQN)
  // Observation (waveforms): told of each cycle on which the engine applied a doorbell or wrote
  // an EQE, after it did.
  Observers<uint64_t> on_acted;

  SC_HAS_PROCESS(EqEngine);
  EqEngine(const sc_core::sc_module_name& name, const SimClock& clock, const EqEngineConfig& cfg = {});

  // An event from a source that cannot wait for room (a PCIe error report, the engine's own
  // overrun report): kept in a bounded list of pending reports and written as soon as the engine
  // can. One that finds the list full is counted in reports_lost() and the LOST_EVENTS register.
  void report(const DeviceEvent& ev);
  uint64_t reports_lost() const { return reports_lost_; }
  uint64_t activations() const { return wakeup_.activations(); }
  // It may still act, and push an EQE, on this cycle (Wakeup::may_act_now; events, doorbells and
  // reports wake it for a later cycle). The DMA engine's rank guard for EQEs.
  bool may_act_now() const { return wakeup_.may_act_now(); }
  Observers<> on_report_lost;

  // Firmware (command unit) access to the EQC table.
  void create(uint32_t eqn, const EqConfig& cfg);
  void destroy(uint32_t eqn);
  bool exists(uint32_t eqn) const { return eqn < table_.size() && table_[eqn].valid; }
  bool takes_command_events() const { return command_target_ >= 0; }  // an EQ's mask has commands
  const EqContext& context(uint32_t eqn) const { return table_.at(eqn); }
  const EqEngineConfig& config() const { return cfg_; }
  uint64_t events_dropped() const { return dropped_; }
  void reset();

 private:
  void step();
  void apply_doorbell(const EqDoorbell& db, uint64_t now);
  void write_eqe(const DeviceEvent& ev, uint64_t now);
  int target_eq(const DeviceEvent& ev) const;
  void find_event_targets();
  void interrupt(EqContext& eq, uint32_t eqn, uint64_t now);

  const SimClock& clock_;
  EqEngineConfig cfg_;
  Wakeup wakeup_;
  std::vector<EqContext> table_;
  int async_target_ = -1, command_target_ = -1;  // find_event_targets()
  uint64_t dropped_ = 0;
  std::deque<DeviceEvent> reports_;  // at most cfg_.report_depth
  uint64_t reports_lost_ = 0;
};

}  // namespace vhca

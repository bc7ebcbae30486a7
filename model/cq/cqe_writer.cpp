#include "model/cq/cqe_writer.h"

#include "model/cq/cq_writer_core.h"

namespace vhca {

CqeWriter::CqeWriter(const sc_core::sc_module_name& name, const SimClock& clock, const CqeWriterConfig& cfg,
                     std::unique_ptr<CqWriterEngine> engine)
    : sc_module(name),
      clock_(clock),
      engine_(engine ? std::move(engine) : std::make_unique<CqWriterCore>(cfg, clock.mhz())),
      wakeup_(clock),
      s_cpl(engine_->s_cpl),
      s_arm(engine_->s_arm),
      s_ctl(engine_->s_ctl),
      s_ci(engine_->s_ci),
      s_access_error(engine_->s_access_error),
      on_bad_doorbell(engine_->on_bad_doorbell),
      on_control_done(engine_->on_control_done) {
  auto wake = [this](uint64_t c) { wakeup_.wake(c); };
  s_cpl.on_data = s_arm.on_data = s_ctl.on_data = s_ci.on_data = s_access_error.on_data = wake;
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

void CqeWriter::bind_outputs(Stream<DmaWrite>& dma, Stream<DeviceEvent>& events, Stream<CiRequest>& ci_req) {
  engine_->m_dma = &dma;
  engine_->m_event = &events;
  engine_->m_ci_req = &ci_req;
  auto wake = [this](uint64_t c) { wakeup_.wake(c); };
  dma.on_space.push_back(wake);
  events.on_space.push_back(wake);
  ci_req.on_space.push_back(wake);
}

void CqeWriter::step() {
  if (!wakeup_.begin_cycle()) return;
  wakeup_.count();
  const uint64_t now = clock_.now();
  if (!engine_->outputs_ready(now)) {
    engine_->note_output_stall();  // woken again when the full output drains
    return;
  }
  if (engine_->act(now) && on_acted) on_acted(now);
  const uint64_t next = engine_->next_cycle(now);
  if (next != UINT64_MAX) wakeup_.wake(next);
}

}  // namespace vhca

#include "model/cq/cqe_writer.h"

#include "model/cq/cq_writer_pipeline.h"

namespace vhca {

CqeWriter::CqeWriter(const sc_core::sc_module_name& name, const SimClock& clock, const CqeWriterConfig& cfg,
                     std::unique_ptr<CqWriterEngine> engine)
    : sc_module(name),
      clock_(clock),
      engine_(engine ? std::move(engine) : std::make_unique<CqWriterPipeline>(cfg, clock.mhz())),
      wakeup_(clock),
      on_bad_doorbell(engine_->on_bad_doorbell),
      on_control_done(engine_->on_control_done) {
  s_cpl.bind_to(engine_->s_cpl);
  s_arm.bind_to(engine_->s_arm);
  s_ctl.bind_to(engine_->s_ctl);
  s_ci.bind_to(engine_->s_ci);
  s_access_error.bind_to(engine_->s_access_error);
  auto wake = [this](uint64_t c) { wakeup_.wake(c); };
  auto input_wake = [this](uint64_t ready) {
    engine_->wake_every_busy_cycle = !on_acted.empty();  // a watcher added since it last acted
    if (const uint64_t wake = engine_->input_wake(ready); wake != UINT64_MAX) wakeup_.wake(wake);
  };
  auto settle = [this](uint64_t c) { engine_->settle(c); };
  engine_->s_cpl.finds_batches = engine_->finds_batches();
  engine_->s_cpl.on_data = engine_->s_arm.on_data = engine_->s_ctl.on_data = engine_->s_ci.on_data =
      engine_->s_access_error.on_data = input_wake;
  engine_->s_cpl.settle = engine_->s_arm.settle = engine_->s_ctl.settle = engine_->s_ci.settle =
      engine_->s_access_error.settle = settle;
  engine_->s_cpl.settle_owed = engine_->s_arm.settle_owed = engine_->s_ctl.settle_owed =
      engine_->s_ci.settle_owed = engine_->s_access_error.settle_owed = engine_->settle_owed();
  m_dma.on_space(wake);
  m_event.on_space(wake);
  m_ci_req.on_space(wake);
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

// The engine (a plain C++ class, shared with the co-simulation harness) pushes through the
// streams the ports were bound to.
void CqeWriter::end_of_elaboration() {
  engine_->m_dma = m_dma.operator->();
  engine_->m_event = m_event.operator->();
  engine_->m_dma_producer = m_dma.producer();
  engine_->m_event_producer = m_event.producer();
  engine_->m_ci_req = m_ci_req.operator->();
}

void CqeWriter::step() {
  if (!wakeup_.begin_cycle()) return;
  wakeup_.count();
  const uint64_t now = clock_.now();
  // Asked through the ports: a refusing output wakes this block, and only it, when it drains. A
  // pipelined engine holds its outputs itself (it stays busy, and awake, while they are full).
  if (!engine_->holds_outputs() && !(m_dma.can_push(now) && m_event.can_push(now) && m_ci_req.can_push(now))) {
    engine_->note_output_stall();  // woken again when the full output drains
    return;
  }
  if (engine_->act(now)) on_acted(now);
  engine_->wake_every_busy_cycle = !on_acted.empty();
  const uint64_t next = engine_->next_cycle(now);
  if (next != UINT64_MAX) wakeup_.wake(next);
}

}  // namespace vhca

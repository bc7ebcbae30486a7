#include "model/dma/dma_engine.h"

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "tlm/posted_tag.h"

namespace vhca {

DmaEngine::DmaEngine(const sc_core::sc_module_name& name, const SimClock& clock, const DmaEngineConfig& cfg)
    : sc_module(name), s_write("s_write", cfg.write_queue_depth), s_ci_req("s_ci_req", 4), clock_(clock),
      write_wakeup_(clock) {
  s_write->on_data = [this](uint64_t c) { write_wakeup_.wake(c); };
  s_ci_req->on_data = [this](uint64_t c) { read_work_.notify(clock_.until(c)); };
  m_ci_rsp.hold_threads(clock);
  s_write->on_space.add([this](uint64_t c) { write_space_.notify(clock_.until(c)); });
  SC_METHOD(write_step);
  sensitive << write_wakeup_.event();
  dont_initialize();
  SC_THREAD(read_thread);
}

void DmaEngine::end_of_elaboration() {
  if (credits.size()) credits->on_return([this] { write_wakeup_.wake(clock_.now()); });
}

// One posted write per cycle, in queue order, when the link has credits for it.
void DmaEngine::write_step() {
  if (!write_wakeup_.begin_cycle()) return;
  write_wakeup_.count();
  const uint64_t now = clock_.now();
  if (s_write->ready(now)) {
    if (credits.size() && !credits->can_post(s_write->front().bytes())) {
      ++credit_stalls_;
      return;  // woken when credits return
    }
    DmaWrite w = s_write->pop(now);
    tlm::tlm_generic_payload& tx = write_tx_;
    PostedTag& tag = write_tag_;
    tag.source = w.source;
    tag.id = w.id;
    tx.set_command(tlm::TLM_WRITE_COMMAND);
    tx.set_address(w.addr);
    const uint32_t len = w.bytes();
    tx.set_data_ptr(w.payload());
    tx.set_data_length(len);
    tx.set_streaming_width(len);
    tx.set_extension(&tag);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(tx, delay);
    tx.clear_extension(&tag);
    ++writes_;
    write_issued_.notify(sc_core::SC_ZERO_TIME);
    log::write(log::Cat::dma, "write {} bytes to {:#x} (source {}, id {})", len, w.addr, int(w.source), w.id);
  }
  if (!s_write->empty()) write_wakeup_.wake(std::max(s_write->head_ready_cycle(), now + 1));
}

bool DmaEngine::issue_read(uint64_t addr, uint8_t* out, uint32_t len) {
  tlm::tlm_generic_payload tx;
  tx.set_command(tlm::TLM_READ_COMMAND);
  tx.set_address(addr);
  tx.set_data_ptr(out);
  tx.set_data_length(len);
  tx.set_streaming_width(len);
  tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  ++reads_;
  socket->b_transport(tx, delay);  // blocks until the completion has arrived
  // The data is usable from the next core-clock edge.
  sc_core::wait(clock_.until(clock_.cycle_at_or_after(sc_core::sc_time_stamp())));
  if (!tx.is_response_ok()) {
    ++read_errors_;
    log::error("DMA read of {} bytes at {:#x} failed: {}", len, addr, tx.get_response_string());
  }
  log::write(log::Cat::dma, "read {} bytes at {:#x}", len, addr);
  return tx.is_response_ok();
}

void DmaEngine::read_thread() {
  for (;;) {
    const uint64_t now = clock_.now();
    const bool on_edge = clock_.at(now) == sc_core::sc_time_stamp();
    if (on_edge && s_ci_req->ready(now)) {
      CiRequest req = s_ci_req->pop(now);
      uint8_t buf[4] = {};
      bool ok = issue_read(req.dbr, buf, 4);
      m_ci_rsp.push_held(CiResponse{req.cqn, get_be32(buf) & 0xFFFFFF, ok});
      continue;
    }
    if (on_edge && !firmware_reads_.empty()) {
      FirmwareRead* r = firmware_reads_.front();
      firmware_reads_.pop_front();
      r->ok = issue_read(r->addr, r->out, r->len);
      r->done = true;
      r->done_event->notify(sc_core::SC_ZERO_TIME);
      continue;
    }
    if (!s_ci_req->empty() || !firmware_reads_.empty()) {
      uint64_t next = s_ci_req->empty() ? now + 1 : std::max(s_ci_req->head_ready_cycle(), now + 1);
      if (!on_edge) next = std::min(next, now + 1);
      sc_core::wait(clock_.until(next));
    } else {
      sc_core::wait(read_work_);
    }
  }
}

void DmaEngine::fence_writes() {
  // Wait until the writes queued so far have been issued, not for an empty queue, which
  // sustained traffic may never give. The link then keeps a later read behind them.
  const uint64_t fence = writes_ + s_write->size();
  while (writes_ < fence) sc_core::wait(write_issued_);
}

bool DmaEngine::read_now(uint64_t addr, uint8_t* out, uint32_t len, bool fence) {
  if (fence) fence_writes();
  return issue_read(addr, out, len);
}

bool DmaEngine::read_blocking(uint64_t addr, uint8_t* out, uint32_t len) {
  // A firmware read must observe every write queued before it (the resize copy reads CQEs that
  // may still sit in the write queue).
  fence_writes();
  sc_core::sc_event done;
  FirmwareRead r{addr, out, len, false, false, &done};
  firmware_reads_.push_back(&r);
  read_work_.notify(sc_core::SC_ZERO_TIME);
  while (!r.done) sc_core::wait(done);
  return r.ok;
}

void DmaEngine::write_blocking(DmaWrite w) {
  // A slot freed this cycle is usable on the next: retry cycle by cycle while the queue is full.
  // Held while the queue is full, woken on the cycle a slot frees (a slot freed on a cycle is
  // usable from the next).
  while (!s_write->can_push(clock_.now())) sc_core::wait(write_space_);
  s_write->push(std::move(w), clock_.now());
}

}  // namespace vhca

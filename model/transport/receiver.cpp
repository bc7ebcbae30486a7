#include "model/transport/receiver.h"

#include "model/common/log.h"
#include "tlm/annotated_delay.h"

namespace vhca {

Receiver::Receiver(const sc_core::sc_module_name& name, const SimClock& clock, const TransportConfig& cfg,
                   Requester& requester, Responder& responder, TransportStats& stats)
    : sc_module(name),
      s_fifo("s_fifo", cfg.rx_fifo_depth, "the IB link: packets for this port (held at the sender by link credits)"),
      clock_(clock),
      cfg_(cfg),
      requester_(requester),
      responder_(responder),
      stats_(stats),
      wakeup_(clock),
      fifo_(cfg.rx_fifo_depth) {
  port_in.register_b_transport(this, &Receiver::arrive);
  // The second pass of a packet that waited comes back here from the read's completion.
  responder_.resume_with([this] {
    handle();
    if (state_ == State::idle) step();
  });
  auto wake = [this] { wakeup_.wake(clock_.now()); };
  requester_.outbox().on_empty.add(wake);
  responder_.outbox().on_empty.add(wake);
  SC_METHOD(step);
  sensitive << wakeup_.event();
  dont_initialize();
}

// Link-up: the buffer the far sender may fill; and the receiver looks for its packets itself
// (rx_takes_arrivals): the link tells it each packet's arrival as it is sent, and an idle
// receiver with nothing waiting wakes for it.
void Receiver::start_of_simulation() {
  if (!flow.size()) return;
  flow->advertise(cfg_.rx_fifo_depth);
  if (!cfg_.rx_takes_arrivals) return;
  looks_ = true;
  flow->look_for_arrivals([this](const sc_core::sc_time& arrival) {
    if (state_ == State::idle && fifo_.empty()) wake_for(arrival);
    else ++stats_.arrivals_sent_busy;  // it looks before its next take
  });
}

void Receiver::arrive(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) {
  if (refuse_annotated_delay(port_in.name(), tx, delay)) return;
  IbPacketExt* ext = nullptr;
  tx.get_extension(ext);
  tx.set_response_status(tlm::TLM_OK_RESPONSE);
  if (!ext) return;
  if (fifo_.size() >= cfg_.rx_fifo_depth) {
    ++stats_.rx_fifo_drops;
    log::error("port rx FIFO full: {} psn {:#x} dropped", ib_op_name(ext->packet.op), ext->packet.psn);
    return;
  }
  fifo_.append() = ext->packet;  // a copy into the slot's storage: the sender's packet stays its own
  s_fifo.pushed(fifo_.size());
  if (taking_arrived_) {  // it is looking: step() takes it next
    ++stats_.arrivals_taken;
    return;
  }
  if (state_ == State::idle) wakeup_.wake(clock_.now());
}

// The packets arrived by now, from the link into the FIFO: the link leaves them on the wire for
// a receiver that looks for them (before each take).
void Receiver::take_arrived() {
  if (!looks_) return;
  taking_arrived_ = true;
  flow->take_arrived();
  taking_arrived_ = false;
}

// Idle with nothing waiting: it wakes on the edge its first packet on the wire arrives by.
void Receiver::wake_for_next_arrival() {
  sc_core::sc_time arrival;
  if (looks_ && flow->next_arrival(arrival)) wake_for(arrival);
}

void Receiver::wake_for(const sc_core::sc_time& arrival) {
  ++stats_.arrival_wakes;
  wakeup_.wake(clock_.cycle_at_or_after(arrival));
}

// On an edge: finish the check of the current packet, or take the next one.
void Receiver::step() {
  const uint64_t now = clock_.now();
  if (!clock_.on_edge()) {
    wakeup_.wake(now + 1);
    return;
  }
  if (state_ == State::checking) {
    if (now < checked_at_) {  // woken early (an outbox emptied), which replaced the check's wake-up
      wakeup_.wake(checked_at_);
      return;
    }
    handle();
    if (state_ == State::waiting) return;
  }
  if (state_ != State::idle) return;
  take_arrived();
  if (fifo_.empty()) {
    wake_for_next_arrival();
    return;
  }
  if (!requester_.settled() || !responder_.outbox().empty()) return;  // woken when they empty
  current_.exchange(fifo_.front());  // the slot keeps the previous packet's storage
  fifo_.pop_front();
  free_slots(1);
  state_ = State::checking;
  checked_at_ = now + cfg_.rx_packet_cycles;
  wakeup_.wake(checked_at_);
}

void Receiver::handle() {
  const uint64_t now = clock_.now();
  if (state_ == State::checking && order_) order_->timers_and_reads(now);
  handled_cycle_ = now;
  IbPacket& p = current_;
  if (state_ == State::checking) {
    ++stats_.packets_received;
    responder_.begin_packet();
    if (p.corrupt) {
      ++stats_.corrupt_dropped;  // ICRC mismatch: silently dropped, as IB requires
      log::write(log::Cat::wq, "rx {} psn {:#x}: ICRC error, dropped", ib_op_name(p.op), p.psn);
      state_ = State::idle;
      return;
    }
    log::write(log::Cat::wq, "rx {} qp {:#x} psn {:#x} len {}", ib_op_name(p.op), p.dest_qpn, p.psn, p.payload.size());
  }
  Responder::Step result = Responder::Step::done;
  if (is_response(p.op))
    requester_.receive(p);
  else if (p.op == IbOp::ud_send)
    result = responder_.receive_ud(p);
  else
    result = responder_.receive(p);
  state_ = result == Responder::Step::wait ? State::waiting : State::idle;
}

void Receiver::reset() {
  take_arrived();  // those were in the FIFO already: discarded with it
  free_slots(uint32_t(fifo_.size()));
  fifo_.clear();
  if (state_ == State::idle) wake_for_next_arrival();
}

}  // namespace vhca

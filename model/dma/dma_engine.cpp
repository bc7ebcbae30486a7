#include "model/dma/dma_engine.h"

#include <algorithm>
#include <cassert>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/common/sim_now.h"
#include "tlm/posted_tag.h"

namespace vhca {

DmaEngine::DmaEngine(const sc_core::sc_module_name& name, const SimClock& clock, const DmaEngineConfig& cfg)
    : sc_module(name), s_write("s_write", cfg.write_queue_depth), s_ci_req("s_ci_req", cfg.ci_request_depth), clock_(clock),
      write_wakeup_(clock),
      writes_(s_write.stream()),
      channel_wakeup_(clock),
      writes_ahead_on_(cfg.writes_ahead),
      early_completions_on_(cfg.early_completions),
      wait_for_credits_on_(cfg.wait_for_credits) {
  write_tx_.set_extension(&write_tag_);
  writes_.on_data = [this](uint64_t c) {
    // A write pushed on the cycle a write issued ahead was (the latest pushed has the latest ready).
    if (pending_count_ != 0 && pending_[pending_count_ - 1].ready == c) check_ahead_order(c);
    if (writes_ahead_on_ && issue_ahead(c)) return;
    // A write queued behind others changes no turn: the channel is woken for the head's turn
    // already (after each turn it wakes for the next head), or waits for the link's credits,
    // whose return wakes it.
    if (writes_.size() > 1) return;
    write_wakeup_.wake(free_turn(c));  // a turn a write issued ahead took is that write's
  };
  // Writes pushed on one cycle leave in the order of their source (a CQE before its EQE before
  // its MSI-X message, then the firmware's and the transport's), whichever block SystemC ran first.
  writes_.same_cycle_rank = [](const DmaWrite& w) { return uint32_t(w.source); };
  s_ci_req->on_data = [this](uint64_t c) { channel_wakeup_.wake(c); };
  m_ci_rsp.on_space([this](uint64_t c) { channel_wakeup_.wake(c); });
  socket.register_nb_transport_bw(this, &DmaEngine::read_response);
  SC_METHOD(write_step);
  sensitive << write_wakeup_.event();
  dont_initialize();
  SC_METHOD(serve_channel);
  sensitive << channel_wakeup_.event();
  dont_initialize();
}

void DmaEngine::end_of_elaboration() {
  if (credits.size())
    credits->on_return([this] {
      if (!(writes_ahead_on_ && issue_on_return())) write_wakeup_.wake(clock_.now());
    });
}

// One posted write per cycle, in queue order, when the link has credits for it.
void DmaEngine::write_step() {
  if (!write_wakeup_.begin_cycle()) return;
  write_wakeup_.count();
  const uint64_t now = clock_.now();
  count_ahead_issued(now);
  if (now != ahead_cycle_ && now != prev_ahead_cycle_ && !write_turn(now)) return;  // woken when credits return
  wake_for_head(now);
}

void DmaEngine::wake_for_head(uint64_t now) {
  if (writes_.empty()) {
    held_for_credits_ = false;
    return;
  }
  const uint64_t turn = free_turn(std::max(writes_.head_ready_cycle(), now + 1));
  if (held_for_credits_ && turn_finds_no_credits(turn)) return;  // the credits' return wakes it
  write_wakeup_.wake(turn);
}

// While the link's credits hold the queue (a turn has found none), the channel sleeps through a
// turn that will find none: its head is settled (pushed before this cycle, so no push can sort
// before it), nothing waits on that turn (issue waiters; a write issued ahead that it would count
// as issued is counted by whoever asks, writes_issued()), and the credits due back by its edge are
// too few. No other sender takes this direction's posted credits and returns are only ever moved
// later, so the turn would stall; the link tells the channel of the first return after that edge,
// as it would have after the stall.
bool DmaEngine::turn_finds_no_credits(uint64_t turn) {
  if (!wait_for_credits_on_ || !issue_waiters_.empty() || writes_.head_ready_cycle() > clock_.now()) return false;
  assert(credits.size());  // held_for_credits_ is set only by a refusal of the bound link's
  if (credits->can_post_by(writes_.front().bytes(), clock_.at(turn))) return false;
  if (turn != slept_turn_) {  // asked again for the same turn (another wake-up meanwhile): counted once
    slept_turn_ = turn;
    ++credit_stalls_;
    ++turns_slept_;
  }
  return true;
}

bool DmaEngine::write_turn(uint64_t now) {
  if (!writes_.ready(now)) return true;
  if (credits.size() && !credits->can_post(writes_.front().bytes())) {
    if (now == slept_turn_)
      --turns_slept_;  // the turn it slept through ran after all (woken for it): held, counted once
    else
      ++credit_stalls_;
    slept_turn_ = 0;
    held_for_credits_ = true;
    return false;
  }
  const uint64_t seq = writes_.front_seq();
  DmaWrite w = writes_.pop(now);
  send(w, sc_core::SC_ZERO_TIME);
  note_issued(seq);
  release_issue_waiters();
  return true;
}

void DmaEngine::send(DmaWrite& w, const sc_core::sc_time& delay) {
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
  sc_core::sc_time d = delay;
  socket->b_transport(tx, d);
  log::write(log::Cat::dma, "write {} bytes to {:#x} (source {}, id {}){}", len, w.addr, int(w.source), w.id,
             delay == sc_core::SC_ZERO_TIME ? "" : ", issued ahead: enters the link at the next edge");
}

// The payload would free its extensions as it goes: the tag is a member.
DmaEngine::~DmaEngine() { write_tx_.clear_extension(&write_tag_); }

// Only a write alone in the queue, and only one that no write pushed later on this cycle can go
// before: a CQE, the first rank of the queue's same-cycle order, or a later rank whose earlier
// ranks' blocks have pushed all they will on this cycle (their rank guards say so). The turn of
// `turn` would issue it, on that edge; so does the link, given the delay to that edge. It counts
// as issued, and frees its queue slot, from `turn`, as it would have. Where a write pushed
// earlier on this cycle went ahead for that turn already, this one's is the turn after, decided
// as surely (a write pushed on the next cycle sorts after it): it goes ahead for that one. (With
// the one issued for this cycle, three then hold their queue slots: Stream::held_ahead.)
bool DmaEngine::issue_ahead(uint64_t turn) {
  if (writes_.size() != 1 || turn < ahead_cycle_) return false;
  DmaWrite& w = writes_.front();
  if (turn != clock_.now() + 1 || !clock_.on_edge()) return false;
  const uint64_t go = turn == ahead_cycle_ ? turn + 1 : turn;  // behind the one issued for `turn`
  // Not one pushed after all where it sorts before that one (a rank guard broke its promise,
  // check_ahead_order): its turn waits, as such a write's always did.
  if (go != turn && (pending_count_ == 0 || writes_.front_order() < pending_[pending_count_ - 1].order)) return false;
  if (w.source != DmaSource::cqe && !may_go_ahead(w)) return false;  // a CQE needs no guard
  if (credits.size() && !credits->can_post(w.bytes())) return false;
  send_head_ahead(go, go == turn ? clock_.period() : clock_.until(go));  // on an edge: the next is a period away
  if (!issue_waiters_.empty()) write_wakeup_.wake(pending_[0].cycle);  // released on that turn, as they would be
  return true;
}

// A CQE needs no guard; an EQE, an MSI-X message, a receive's payload write and an RDMA WRITE's or
// READ response's data (rank `other`) go when every rank before theirs says it pushes nothing more
// on this cycle. Rank `other` has two producers, the transport's outboxes (the requester's sorted
// before the responder's), and one guard for both: it must say done too, so that a push of the
// requester's on this cycle cannot sort before a write of the responder's gone ahead. (The firmware's writes, ranks `command` and `cqe_copy`, do not go ahead:
// they are few. Until the transport's blocks acted on an edge in one order, decisions.md 48, RDMA
// WRITE payloads and large receive payloads going ahead moved results, decisions.md 47.)
bool DmaEngine::may_go_ahead(const DmaWrite& w) {
  switch (w.source) {
    case DmaSource::cqe: return true;
    case DmaSource::command:
    case DmaSource::cqe_copy: return false;
    default: break;
  }
  // Rank `other`: its own guard's word too (the ranks before the next one).
  return ranks_before_done(w.source == DmaSource::other ? DmaSource::cqe_copy : w.source);
}

std::function<bool()> DmaEngine::set_rank_guard(DmaSource source, std::function<bool()> pushes_done_now) {
  std::swap(rank_guards_.at(size_t(source)), pushes_done_now);
  return pushes_done_now;
}

bool DmaEngine::ranks_before_done(DmaSource source) {
  // From the nearest rank down: a rank without a guard (every one after the EQE's) ends it at once.
  for (size_t r = size_t(source); r-- > size_t(DmaSource::cqe);) {
    if (!rank_guards_[r]) return false;
    if (!rank_guards_[r]()) {
      if (source == DmaSource::eqe || source == DmaSource::msix) ++events_held_;
      return false;
    }
  }
  return true;
}

// The queue sorts same-cycle writes by rank, then by producer: a write pushed for the turn of one
// issued ahead with a rank before it, or of its rank from a producer ordered before it (the
// requester's outbox before the responder's), would have left first. Issuing ahead never lets that
// happen (the rank guards), so this is the check that they keep their promise.
// (`ready`: the cycle a write pushed now is visible from; those issued ahead that were pushed on
// this cycle too are the ones it may sort before.)
void DmaEngine::check_ahead_order(uint64_t ready) {
  if (writes_.empty() || writes_.head_ready_cycle() != ready) return;
  const Ahead* passed = nullptr;
  for (uint32_t i = 0; i < pending_count_; ++i)
    if (pending_[i].ready == ready && writes_.front_order() < pending_[i].order && !passed) passed = &pending_[i];
  if (!passed) return;
  ++ahead_order_breaks_;
  log::error("DMA write of source {} pushed for cycle {} after a write of source {} was issued ahead for it: "
             "a rank guard was wrong",
             int(writes_.front().source), ready - 1, int(passed->order >> 32));  // the rank is the source
}

// The queue's head goes on the link now, entering it `delay` from now, at `turn`'s edge.
void DmaEngine::send_head_ahead(uint64_t turn, const sc_core::sc_time& delay) {
  count_ahead_issued(clock_.now());  // a write issued ahead for this cycle counts as issued before this one
  prev_ahead_cycle_ = ahead_cycle_;
  ahead_cycle_ = turn;
  assert(pending_count_ < pending_.size());
  Ahead& ahead = pending_[pending_count_++];
  ahead.cycle = turn;
  ahead.seq = writes_.front_seq();
  ahead.ready = writes_.head_ready_cycle();
  // Pushed on an earlier cycle (credits back between edges), no later push goes before it; pushed
  // on this one, a push of a lower order on it would (a rank guard's broken promise).
  const DmaSource source = writes_.front().source;
  const bool pushed_now = ahead.ready == clock_.now() + 1;
  ahead.order = pushed_now ? writes_.front_order() : 0;
  if (source == DmaSource::eqe || source == DmaSource::msix) ++events_ahead_;
  const bool payload = source == DmaSource::recv_data || source == DmaSource::other;
  if (payload && pushed_now) ++payloads_ahead_;
  ++writes_ahead_;
  send(writes_.front(), delay);
  writes_.pop_ahead(turn);
}

// Credits came back between two edges to a channel that waited for them (the link tells only a
// refused sender): the turn of the next edge will issue the queue's head, and nothing can change
// that before it. No block pushes between edges, so no write can go before the head unless it
// was pushed on this cycle (a later push of this cycle with a lower rank would sort before it,
// so only a CQE, the first rank, goes then); no other sender takes posted credits; the link
// places the write at that edge, after TLPs entering earlier. It goes on the link now, as a lone
// CQE goes from its push, and counts as issued, and frees its slot, from that turn.
bool DmaEngine::issue_on_return() {
  if (writes_.empty() || clock_.on_edge()) return false;
  const uint64_t turn = clock_.now() + 1;
  if (turn <= ahead_cycle_ || writes_.head_ready_cycle() > turn) return false;
  DmaWrite& w = writes_.front();
  if (writes_.head_ready_cycle() == turn && w.source != DmaSource::cqe) return false;
  if (!credits->can_post(w.bytes())) return false;
  send_head_ahead(turn, clock_.until(turn));
  if (!issue_waiters_.empty())
    write_wakeup_.wake(turn);  // released on that turn, as they would be; it wakes for the next head
  else
    wake_for_head(turn);
  return true;
}

// A write issued ahead counts as issued from its turn's cycle on; those waiting for it go then
// (for one still ahead, the channel wakes on its turn).
inline void DmaEngine::count_ahead_issued(uint64_t now) {
  if (pending_count_ == 0 || now < pending_[0].cycle) return;
  note_issued(pending_[0].seq);
  if (--pending_count_ != 0) {
    pending_[0] = pending_[1];
    if (now >= pending_[0].cycle) {
      note_issued(pending_[0].seq);
      pending_count_ = 0;
    }
  }
  release_issue_waiters();
  if (pending_count_ != 0 && !issue_waiters_.empty()) write_wakeup_.wake(pending_[0].cycle);
}

void DmaEngine::settle_turn() {
  const uint64_t now = clock_.now();
  count_ahead_issued(now);
  if (now <= ahead_cycle_) return;  // this cycle's turn was the write issued ahead's (or is to come)
  // Otherwise (hca.writes_ahead off, or not a lone CQE) the turn itself runs now, if it is due,
  // has not run, and will issue (not held for credits).
  if (!writes_.ready(now)) return;
  if (credits.size() && !credits->can_post(writes_.front().bytes())) return;
  if (!write_wakeup_.claim_cycle()) return;  // off an edge, or the turn has run
  write_turn(now);
  wake_for_head(now);
}

// The prefix of push order that has all left grows past a write issued ahead of one pushed before
// it on the same cycle once that one leaves too.
void DmaEngine::note_issued(uint64_t seq) {
  if (seq != issued_prefix_ + 1) return issued_ahead_.push_back(seq);
  ++issued_prefix_;
  if (issued_ahead_.empty()) return;  // the usual case: writes leave in push order
  for (auto it = std::find(issued_ahead_.begin(), issued_ahead_.end(), issued_prefix_ + 1); it != issued_ahead_.end();
       it = std::find(issued_ahead_.begin(), issued_ahead_.end(), issued_prefix_ + 1)) {
    issued_ahead_.erase(it);
    ++issued_prefix_;
  }
}

void DmaEngine::read(uint64_t addr, uint8_t* out, uint32_t len, bool fence, ReadDone done) {
  // Wait until the writes queued so far have been issued, not for an empty queue, which
  // sustained traffic may never give. The link then keeps the read behind them.
  if (!fence) {
    issue(addr, out, len, std::move(done));
    return;
  }
  when_issued(writes_queued(), [this, addr, out, len, done = std::move(done)]() mutable {
    issue(addr, out, len, std::move(done));
  });
}

// Waiters are released in the order they came; marks never decrease (writes_queued() only
// grows), so a waiter whose mark is reached never waits behind one whose mark is not.
void DmaEngine::when_issued(uint64_t mark, std::function<void()> then) {
  if (mark <= writes_issued()) return then();
  issue_waiters_.push_back(IssueWaiter{mark, std::move(then)});
  if (pending_count_ != 0) write_wakeup_.wake(pending_[0].cycle);  // the turn that counts it releases them
}

void DmaEngine::release_issue_waiters() {
  while (!issue_waiters_.empty() && issue_waiters_.front().mark <= issued_prefix_) {
    std::function<void()> then = std::move(issue_waiters_.front().then);
    issue_waiters_.pop_front();
    then();
  }
}

DmaEngine::ReadSlot* DmaEngine::issue(uint64_t addr, uint8_t* out, uint32_t len, ReadDone done, bool early_ok) {
  ReadSlot& tx = *slots_.take();  // with the link until its response
  if (!tx.early.moved)  // a slot made now: told a later arrival, its completion moves
    tx.early.moved = [this, s = &tx](const sc_core::sc_time& delay) {
      finish_on(s, clock_.cycle_at_or_after(sim_now() + delay));
    };
  tx.set_command(tlm::TLM_READ_COMMAND);
  tx.set_address(addr);
  tx.set_data_ptr(out);
  tx.set_data_length(len);
  tx.set_streaming_width(len);
  tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tx.done = std::move(done);
  tx.early.allowed = early_ok && early_completions_on_;
  tx.early.enters = sc_core::SC_ZERO_TIME;  // set by the link when it tells the completion early
  tx.usable = 0;
  ++reads_;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  const tlm::tlm_sync_enum status = socket->nb_transport_fw(tx, phase, delay);
  if (status == tlm::TLM_COMPLETED) {  // refused at once (the link logs why)
    sc_core::sc_time now = sim_now();
    completions_.at(clock_.at(clock_.cycle_at_or_after(now)), [this, &tx] { finish_read(&tx); });
  }
  return &tx;
}

// BEGIN_RESP: the completion arrives `delay` from now (told at the read's far-side stage when early,
// tlm/early_completion.h, and perhaps told again later); the data is usable from the edge at or
// after its arrival.
tlm::tlm_sync_enum DmaEngine::read_response(tlm::tlm_generic_payload& tx, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_RESP) return tlm::TLM_ACCEPTED;
  ReadSlot* slot = static_cast<ReadSlot*>(&tx);
  const uint64_t usable = clock_.cycle_at_or_after(sim_now() + delay);
  if (slot == firmware_slot_) {  // told now, with its usable cycle: nothing runs then for it
    firmware_slot_ = nullptr;
    const bool ok = read_ok(*slot);
    release(slot);  // its done is the refusal path's (finish_read), not this one's
    firmware_done(ok, usable);
  } else {
    finish_on(slot, usable);
  }
  phase = tlm::END_RESP;
  return tlm::TLM_COMPLETED;
}

bool DmaEngine::read_ok(const ReadSlot& slot) {
  const bool ok = slot.is_response_ok();
  if (!ok) {
    ++read_errors_;
    log::error("DMA read of {} bytes at {:#x} failed: {}", slot.get_data_length(), slot.get_address(),
               slot.get_response_string());
  }
  log::write(log::Cat::dma, "read {} bytes at {:#x}", slot.get_data_length(), slot.get_address());
  return ok;
}

DmaEngine::ReadDone DmaEngine::release(ReadSlot* slot) {
  ReadDone done = std::move(slot->done);
  slot->done = nullptr;
  slots_.give(slot);
  return done;
}

void DmaEngine::finish_on(ReadSlot* slot, uint64_t usable) {
  if (usable == slot->usable) return;  // told again for the same edge: the action stands
  slot->usable = usable;
  // Told early: among that edge's actions as when the completion entered the wire.
  const bool early = slot->early.enters != sc_core::SC_ZERO_TIME;
  completions_.at_ordered(clock_.at(usable), [this, slot] { finish_if_usable(slot); },
                          early ? slot->early.enters : sim_now());
}

// An action left behind by a completion told again for a later edge finds it not yet usable.
void DmaEngine::finish_if_usable(ReadSlot* slot) {
  if (clock_.now() < slot->usable) return;
  finish_read(slot);
}

void DmaEngine::finish_read(ReadSlot* slot) {
  const bool ok = read_ok(*slot);
  release(slot)(ok);
}

void DmaEngine::serve_channel() {
  if (channel_busy_) return;
  const uint64_t now = clock_.now();
  if (!clock_.on_edge()) {
    channel_wakeup_.wake(now + 1);
    return;
  }
  if (now < channel_free_at_) {  // a firmware read's data is not yet usable
    channel_wakeup_.wake(channel_free_at_);
    return;
  }
  if (ci_held_) {
    if (!m_ci_rsp.can_push(now)) return;  // woken when the stream has room
    m_ci_rsp->push(*ci_held_, now);
    ci_held_.reset();
  }
  if (s_ci_req->ready(now)) {
    const CiRequest req = s_ci_req->pop(now);
    channel_busy_ = true;
    issue(req.dbr, ci_buf_, 4, [this, cqn = req.cqn](bool ok) {
      ci_held_ = CiResponse{cqn, get_be32(ci_buf_) & 0xFFFFFF, ok};
      channel_done();
    });
    return;
  }
  if (!firmware_reads_.empty()) {
    serving_ = std::move(firmware_reads_.front());
    firmware_reads_.pop_front();
    channel_busy_ = true;
    // Refused at once, it completes through finish_read (on this cycle); else read_response
    // tells it as the completion arrives.
    ReadSlot* slot = issue(
        serving_.addr, serving_.out, serving_.len, [this](bool ok) { firmware_done(ok, clock_.now()); }, false);
    if (slot->get_response_status() == tlm::TLM_INCOMPLETE_RESPONSE) firmware_slot_ = slot;
    return;
  }
  if (!s_ci_req->empty()) channel_wakeup_.wake(s_ci_req->head_ready_cycle());
}

void DmaEngine::channel_done() {
  channel_busy_ = false;
  serve_channel();
}

// The channel is free from the cycle the firmware read's data is usable; what waits is served then.
void DmaEngine::firmware_done(bool ok, uint64_t usable) {
  FirmwareDone done = std::move(serving_.done);
  channel_busy_ = false;
  channel_free_at_ = usable;
  if (!firmware_reads_.empty() || !s_ci_req->empty()) channel_wakeup_.wake(usable);
  done(ok, usable);
}

bool DmaEngine::read_blocking(uint64_t addr, uint8_t* out, uint32_t len) {
  sc_core::sc_event arrived;
  bool ok = false, done = false;
  firmware_read(addr, out, len, [&](bool r, uint64_t usable) {
    ok = r;
    done = true;
    arrived.notify(clock_.until(usable));
  });
  while (!done) sc_core::wait(arrived);
  return ok;
}

void DmaEngine::firmware_read(uint64_t addr, uint8_t* out, uint32_t len, FirmwareDone done) {
  // A firmware read must observe every write queued before it (the resize copy reads CQEs that
  // may still sit in the write queue).
  FirmwareRead r{addr, out, len, std::move(done)};
  const uint64_t mark = writes_queued();
  if (mark <= writes_issued()) return queue_firmware_read(std::move(r));
  when_issued(mark, [this, r = std::move(r)]() mutable { queue_firmware_read(std::move(r)); });
}

void DmaEngine::queue_firmware_read(FirmwareRead r) {
  firmware_reads_.push_back(std::move(r));
  channel_wakeup_.wake(clock_.now());
}

}  // namespace vhca

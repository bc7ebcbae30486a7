#include "model/transport/outbox.h"

#include <cstring>

#include "model/common/log.h"
#include "model/regs/tables.h"

namespace vhca {

Outbox::Outbox(const sc_core::sc_module_name& name, const SimClock& clock, size_t depth, DmaEngine& dma,
               sc_core::sc_port<CompletionPutIf>& completions, TransportStats& stats, uint32_t write_order)
    : sc_module(name),
      s_items("s_items", depth, "its block: payload writes and completion records, in order"),
      clock_(clock),
      dma_(dma),
      completions_(completions),
      stats_(stats),
      write_order_(write_order),
      items_(depth),
      depth_(depth) {
  m_dma.on_space([this](uint64_t c) { wake_.notify(clock_.until(c)); });
  SC_METHOD(drain_method);
  sensitive << wake_;
  dont_initialize();
}

void Outbox::write(uint64_t addr, const uint8_t* data, uint32_t len, DmaSource source, uint32_t id) {
  constexpr uint32_t kChunk = 4096;
  while (len > 0) {
    const uint32_t n = std::min(len, kChunk);
    DmaWrite& w = add_item<DmaWrite>();
    ++writes_added_;
    w.addr = addr;
    w.len = n;
    if (n <= w.data.size()) {
      std::memcpy(w.data.data(), data, n);  // in place, as a CQE's: no allocation
      w.bulk.clear();
    } else {
      w.bulk.assign(data, data + n);
    }
    w.source = source;
    w.id = id;
    addr += n;
    data += n;
    len -= n;
  }
  drain();
}

// Marks of writes the DMA engine has issued are no longer needed: `issued` writes of its queue.
void Outbox::forget_issued_marks(uint64_t issued) {
  while (!marks_.empty() && marks_.front() <= issued) {
    marks_.pop_front();
    ++marks_base_;
  }
}

bool Outbox::writes_issued_through(uint64_t n, std::function<void()> then) {
  forget_issued_marks(dma_.writes_issued());
  if (n <= marks_base_) return true;
  if (n > writes_handed_) {
    after_writes_handed_ = std::move(then);  // one waiter: the transmit arbiter's held ACK
    after_writes_n_ = n;
    return false;
  }
  dma_.when_issued(marks_.at(size_t(n - marks_base_ - 1)), std::move(then));
  return false;
}

void Outbox::complete(const CompletionRecord& r) {
  ++stats_.completions;
  if (r.syndrome == syndrome::kWrFlush) ++stats_.flushed;
  log::write(log::Cat::wq, "QP {:#x} {} completion wr_id {:#x} status {:#x} -> CQ {}", r.qpn,
             r.is_send ? "send" : "recv", r.wr_id, r.syndrome, r.cqn);
  add_item<CompletionRecord>() = r;
  drain();
}

// A new item at the back, filled in place by the caller (not built aside and moved in twice); a
// slot that held the same kind is reused as it is, its fields all set by the caller.
template <typename Item>
Item& Outbox::add_item() {
  if (items_.size() >= depth_) {
    ++overflows_;  // the blocks ask has_room() first: this is a model error, not a drop
    log::error("{}: {} items, past its depth {}", name(), items_.size() + 1, depth_);
  }
  std::variant<DmaWrite, CompletionRecord>& slot = items_.append();
  Item* item = std::get_if<Item>(&slot);
  if (!item) item = &slot.emplace<Item>();
  s_items.pushed(items_.size());
  return *item;
}

bool Outbox::holds_writes_before(DmaSource source) const {
  // The write being pushed is in the DMA queue already as far as asking goes (the queue asks, as
  // it is pushed, whether it may go ahead).
  for (size_t i = pushing_front_ ? 1 : 0; i < items_.size(); ++i)
    if (const auto* w = std::get_if<DmaWrite>(&items_.at(i)); w && w->source < source) return true;
  return false;
}

// Hands on what it can, in order; stops at the first item that finds no room.
void Outbox::drain() {
  const uint64_t now = clock_.now();
  while (!items_.empty()) {
    if (auto* w = std::get_if<DmaWrite>(&items_.front())) {
      if (!m_dma.can_push(now)) break;  // m_dma's on_space wakes us
      pushing_front_ = true;
      m_dma.push(std::move(*w), now, write_order_);
      pushing_front_ = false;
      // Kept to the writes still in the DMA queue, whether or not an ACK ever asks (the
      // requester's outbox is never asked).
      forget_issued_marks(dma_.writes_known_issued());
      marks_.push_back(dma_.writes_queued());
      ++writes_handed_;
      if (after_writes_handed_ && writes_handed_ == after_writes_n_) {
        std::function<void()> then = std::move(after_writes_handed_);
        after_writes_handed_ = nullptr;
        dma_.when_issued(marks_.back(), std::move(then));
      }
    } else {
      if (!completions_->try_put(std::get<CompletionRecord>(items_.front()))) {
        // drain_method waits for the arbiter's space event (only it can wait on it).
        if (!held_by_completions_ && !in_method_) wake_.notify(sc_core::SC_ZERO_TIME);
        held_by_completions_ = true;
        break;
      }
    }
    items_.pop_front();
  }
  if (!items_.empty()) {
    if (!held_) ++holds_;
    held_ = true;
    return;
  }
  held_by_completions_ = false;
  if (held_) {
    held_ = false;
    on_empty();
  }
}

void Outbox::drain_method() {
  in_method_ = true;
  held_by_completions_ = false;
  drain();
  in_method_ = false;
  if (held_by_completions_) next_trigger(completions_->space_event());
}

}  // namespace vhca

#include "tlm/pcie_link.h"

#include <algorithm>
#include <cstring>

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "model/common/sim_now.h"

namespace vhca {

using sc_core::sc_time;

PcieLink::PcieLink(const sc_core::sc_module_name& name, const PcieLinkConfig& cfg)
    : sc_module(name),
      cfg_(cfg),
      wire_time_(1000.0, cfg.gbytes_per_s),  // bytes / (GB/s) = ns
      dir_{{cfg.up_posted_headers, cfg.up_posted_data, cfg.up_nonposted_headers, cfg.max_payload, cfg.latency},
           {cfg.down_posted_headers, cfg.down_posted_data, cfg.down_nonposted_headers, cfg.max_payload, cfg.latency}} {
  up_in.bind(up_entry_);
  down_in.bind(down_entry_);
  up_out.register_invalidate_direct_mem_ptr(this, &PcieLink::invalidate_up_dmi);
  up_pending.bind(*this);
  down_resume.bind(*this);
  up_credits.bind(dir_[0].credits);
  down_credits.bind(dir_[1].credits);
  dir_[0].credits.on_return([this] { take_read_credits(0); });
  dir_[1].credits.on_return([this] { take_read_credits(1); });
  SC_METHOD(returns_up);
  sensitive << dir_[0].credits.return_event();
  dont_initialize();
  SC_METHOD(returns_down);
  sensitive << dir_[1].credits.return_event();
  dont_initialize();
  SC_METHOD(deliver_up);
  sensitive << dir_[0].arrival_event;
  dont_initialize();
  SC_METHOD(deliver_down);
  sensitive << dir_[1].arrival_event;
  dont_initialize();
}

sc_time PcieLink::wire_time(uint64_t bytes) const { return wire_time_(bytes); }

// A TLP that goes before others placed earlier (place() appends the rest): those it passes leave
// later where the serializer is now busy when they would have started.
sc_time PcieLink::place_passing(Direction& d, Placed entry) {
  trim(d);
  size_t pos = d.batch.size();
  while (pos > 0 && entry.goes_before(d.batch[pos - 1])) --pos;
  size_t write_index = 0;  // the entry's place among the batch's writes
  for (size_t i = 0; i < pos; ++i) write_index += d.batch[i].kind == Placed::Kind::write;
  size_t slot = 0;
  if (entry.kind == Placed::Kind::write) {
    // The caller appended it to in_flight; it goes before the writes it passes.
    ++d.batch_writes;
    slot = d.in_flight.size() - d.batch_writes + write_index;
    for (size_t i = d.in_flight.size() - 1; i > slot; --i) std::swap(d.in_flight.at(i - 1), d.in_flight.at(i));
  }
  d.batch.insert(d.batch.begin() + std::ptrdiff_t(pos), entry);
  sc_time free = pos == 0 ? d.batch_base : d.batch[pos - 1].end;
  for (size_t i = pos; i < d.batch.size(); ++i) {
    Placed& p = d.batch[i];
    const sc_time end = std::max(p.at, free) + p.length;
    if (i == pos) {
      p.end = end;
      if (p.kind == Placed::Kind::write) d.in_flight.at(slot).arrival = end + cfg_.latency, ++write_index;
    } else {
      const sc_time by = end - p.end;
      p.end = end;
      if (by != sc_core::SC_ZERO_TIME) passed(d, write_index, p, by);
      write_index += p.kind == Placed::Kind::write;
    }
    free = p.end;
  }
  d.free_at = free;
  // Counted apart when it passes a completion told early (only the moves matter there: passed()).
  if (!(d.batch[pos + 1].kind == Placed::Kind::completion && d.batch[pos + 1].early)) ++passes_;
  return d.batch[pos].end;
}

void PcieLink::trim(Direction& d) {
  const sc_time now = sim_now();
  size_t n = 0;
  while (n < d.batch.size() && d.batch[n].at < now) {
    d.batch_writes -= d.batch[n].kind == Placed::Kind::write;
    d.batch_base = d.batch[n].end;
    ++n;
  }
  d.batch.erase(d.batch.begin(), d.batch.begin() + std::ptrdiff_t(n));
}

// A TLP placed earlier was passed and leaves `by` later: what its arrival timed moves too (an
// on-time write's wake-up finds it not yet due and waits again; a read's far-side stage likewise;
// a completion told early is told its new arrival).
void PcieLink::passed(Direction& d, size_t write_index, const Placed& moved, const sc_time& by) {
  if (moved.kind == Placed::Kind::write) {
    Posted& p = d.in_flight.at(d.in_flight.size() - d.batch_writes + write_index);
    const sc_time was = p.arrival;
    p.arrival += by;
    if (p.quiet) d.credits.move_return(was + cfg_.latency, p.arrival + cfg_.latency, p.tlps, Credits::data_credits(p.len), 0);
    return;
  }
  if (moved.kind == Placed::Kind::completion) {
    // Only one told early can be passed (it was placed before it entered; completions placed as
    // they enter go first, in order); its reader learns the new arrival.
    if (!moved.early) {
      log::error("{}: a completion placed as it entered was passed", name());
      return;
    }
    ++early_moved_;
    moved.early->moved(moved.end + cfg_.latency - sim_now());
    return;
  }
  Read* r = moved.read;
  const sc_time was = r->at_far_side;
  r->at_far_side += by;
  const uint32_t requests = read_requests(r->tx->get_data_length());
  d.credits.move_return(was + cfg_.latency, r->at_far_side + cfg_.latency, 0, 0, requests);
}

bool PcieLink::Credits::can_post(uint64_t bytes) const { return fits(headers(bytes), data_credits(bytes)); }

bool PcieLink::Credits::has_room(uint64_t bytes) const {
  returns_.apply_due([this](const Amount& a) { release(a); });
  return room_for(ph_used_, pd_used_, headers(bytes), data_credits(bytes));
}

bool PcieLink::Credits::can_post_by(uint64_t bytes, const sc_time& at) const {
  returns_.apply_due([this](const Amount& a) { release(a); });
  const uint32_t need_h = headers(bytes), need_d = data_credits(bytes);
  uint32_t ph = ph_used_, pd = pd_used_;
  returns_.for_each_due_by(at, [&](const Amount& a) {
    ph -= a.ph;
    pd -= a.pd;
    return !room_for(ph, pd, need_h, need_d);  // not yet enough: count the next
  });
  const bool ok = room_for(ph, pd, need_h, need_d);
  if (!ok) returns_.want_wake_after(at);
  return ok;
}

bool PcieLink::Credits::can_read() const {
  returns_.apply_due([this](const Amount& a) { release(a); });
  const bool ok = nph_used_ < nph_;
  if (!ok) returns_.want_wake();
  return ok;
}

uint32_t PcieLink::Credits::take_posted(uint64_t bytes) {
  const uint32_t h = headers(bytes), data = data_credits(bytes);
  if (!fits(h, data)) {
    ++overdrafts;
    log::error("PCIe: a posted write of {} bytes was sent without its flow-control credits", bytes);
  }
  ph_used_ += h;
  pd_used_ += data;
  pd_max = std::max(pd_max, pd_used_);
  return h;
}

// In use as the write enters the wire: the returns due by then are back by then.
uint32_t PcieLink::Credits::take_posted_ahead(uint64_t bytes, const sc_time& enters) {
  const uint32_t before = pd_max;
  const uint32_t h = take_posted(bytes);
  uint32_t in_use = pd_used_;
  returns_.for_each_due_by(enters, [&](const Amount& a) {
    in_use -= a.pd;
    return true;
  });
  pd_max = std::max(before, in_use);
  return h;
}


// Honours the annotated delay: the transaction enters the link at now + delay. A posted write
// returns at once with the delay unchanged; a read consumes it (it waits until its completion,
// so the caller is in step with SystemC's time when it returns).
void PcieLink::transport(int dir, tlm::tlm_generic_payload& tx, sc_time& delay) {
  Direction& d = dir_[dir];
  if (!tx.is_write() && delay != sc_core::SC_ZERO_TIME) {
    sc_core::wait(delay);
    delay = sc_core::SC_ZERO_TIME;
  }
  const sc_time now = sim_now() + delay;
  const uint64_t len = tx.get_data_length();
  if (tx.is_write()) {
    // Quiet writes already due land now: what waits in flight stays within the link's window.
    if (dir == 0 && quiet_in_flight_) land_due();
    // A host core's write issued ahead (it runs ahead only where nothing else happens before the
    // write enters: firmware-shim/cpu_core.h) counts its credits in use as at its entry; the DMA
    // engine's writes ahead (decisions.md 41), among other writes, as at their issue.
    const uint32_t headers = dir == 1 && delay != sc_core::SC_ZERO_TIME ? d.credits.take_posted_ahead(len, now)
                                                                         : d.credits.take_posted(len);
    PostedTag* tag = nullptr;
    tx.get_extension(tag);
    Posted& p = d.in_flight.append();  // filled in place: a slot keeps the payload storage it had
    p.tlps = headers;
    p.addr = tx.get_address();
    p.len = uint32_t(len);
    if (len <= p.small.size())
      std::memcpy(p.small.data(), tx.get_data_ptr(), len);
    else
      p.large.assign(tx.get_data_ptr(), tx.get_data_ptr() + len);
    p.source = tag ? tag->source : DmaSource::other;
    p.id = tag ? tag->id : 0;
    p.quiet = dir == 0 && lands_quietly(p.addr, len);
    p.returned = p.quiet;  // a quiet write: the far side takes it at its arrival, wherever it is applied
    const bool quiet = p.quiet;
    const uint32_t tlps = p.tlps;
    // `p` may move: this write goes before writes of this instant it passes.
    const sc_time arrival =
        place(d, now, Placed::Kind::write, nullptr, tlp_time(d, len, cfg_.max_payload, cfg_.request_overhead)) +
        cfg_.latency;
    if (quiet) {
      ++quiet_in_flight_;
      d.credits.give_back(arrival + cfg_.latency, tlps, Credits::data_credits(len), 0);
    } else if (d.on_time++ == 0) {
      d.arrival_event.notify(arrival - sim_now());  // none before it wakes the link
    }
    tx.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  // Non-posted read, from a thread: the stages below, waited for.
  sc_core::sc_event done;
  start_read(tx, dir, &done);
  sc_core::wait(done);  // notified once, for the completion's arrival
}

// Upstream reads without a thread: accepted at once (END_REQ), answered with BEGIN_RESP on the
// backward path, its annotated delay saying when the completion arrives.
tlm::tlm_sync_enum PcieLink::nb_transport(int dir, tlm::tlm_generic_payload& tx, tlm::tlm_phase& phase, sc_time& delay) {
  if (dir != 0 || phase != tlm::BEGIN_REQ || tx.is_write()) {
    log::error("{}: only upstream reads may use the non-blocking path (phase {})", dir == 0 ? up_in.name() : down_in.name(),
               int(phase));
    tx.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return tlm::TLM_COMPLETED;
  }
  if (delay == sc_core::SC_ZERO_TIME)
    start_read(tx, 0, nullptr);
  else
    actions_.at(sim_now() + delay, [this, &tx] { start_read(tx, 0, nullptr); });
  phase = tlm::END_REQ;
  delay = sc_core::SC_ZERO_TIME;
  return tlm::TLM_UPDATED;
}

// Request TLPs (header only, one per MRRS chunk) go out in the read's direction, each once a
// non-posted header credit is free; reads waiting for credits take them in issue order.
void PcieLink::start_read(tlm::tlm_generic_payload& tx, int dir, sc_core::sc_event* waiter) {
  Read* r = reads_.take();
  *r = Read{&tx, dir, read_requests(tx.get_data_length()), waiter};
  dir_[dir].credit_waits.push_back(r);
  take_read_credits(dir);
}

void PcieLink::take_read_credits(int dir) {
  Direction& d = dir_[dir];
  while (!d.credit_waits.empty()) {
    Read* r = d.credit_waits.front();
    while (r->requests_left > 0 && d.credits.can_read()) {
      d.credits.take_nonposted();
      --r->requests_left;
    }
    if (r->requests_left > 0) {
      ++d.credits.np_waits;  // woken by the credits' return (on_return)
      return;
    }
    d.credit_waits.pop_front();
    send_read_requests(r);
  }
}

void PcieLink::send_read_requests(Read* r) {
  Direction& d = dir_[r->dir];
  const uint64_t len = r->tx->get_data_length();
  const uint32_t requests = read_requests(len);
  sc_time length = sc_core::SC_ZERO_TIME;
  for (uint32_t i = 0; i < requests; ++i) length += wire_time(cfg_.request_overhead);
  d.wire_bytes += uint64_t(requests) * cfg_.request_overhead;
  r->at_far_side = place(d, sim_now(), Placed::Kind::read, r, length) + cfg_.latency;
  d.credits.give_back(r->at_far_side + cfg_.latency, 0, 0, requests);
  actions_.at(r->at_far_side, [this, r] { reach_far_side(r); });
}

// A read passed on the wire after this stage was timed reaches the far side later.
void PcieLink::reach_far_side(Read* r) {
  if (r->at_far_side > sim_now()) return actions_.at(r->at_far_side, [this, r] { reach_far_side(r); });
  read_at_far_side(r);
}

void PcieLink::read_at_far_side(Read* r) {
  Direction& d = dir_[r->dir];
  deliver_due(r->dir);  // posted writes that arrived no later are visible to this read
  if ((d.held && due_writes_waiting(d)) || !d.held_reads.empty()) {
    d.held_reads.push_back(r);  // resume_down() brings it back
    return;
  }
  sc_time zero = sc_core::SC_ZERO_TIME;
  out(r->dir)->b_transport(*r->tx, zero);
  // The completion enters the return wire once its data is ready, so posted writes sent meanwhile
  // go before it. A reader that takes its arrival early is told now: the completion is placed now,
  // entering then (a TLP entering before that, placed later, passes it); else the link waits.
  const sc_time enters = sim_now() + cfg_.read_access;
  const uint64_t order = ++completions_made_;
  EarlyCompletion* early = nullptr;
  if (!r->waiter) r->tx->get_extension(early);
  if (early && early->allowed) return send_completion(r, enters, order, early);
  actions_.at(enters, [this, r, enters, order] { send_completion(r, enters, order, nullptr); });
}

// The completion goes on the return wire now that its data is ready; the reader learns when it
// will have arrived (a thread is woken then; a non-blocking initiator gets BEGIN_RESP with that
// time as its annotated delay, the TLM-2.0 way to say "from then on").
void PcieLink::send_completion(Read* r, const sc_time& enters, uint64_t order, EarlyCompletion* early) {
  Direction& back = dir_[1 - r->dir];
  const sc_time now = sim_now();
  const sc_time length = tlp_time(back, r->tx->get_data_length(), cfg_.completion_size, cfg_.completion_overhead);
  const sc_time back_at = place(back, enters, Placed::Kind::completion, nullptr, length, order, early) + cfg_.latency;
  if (early) {
    early->enters = enters;
    ++told_early_;
  }
  const Read done = *r;
  reads_.give(r);
  if (done.waiter) {
    done.waiter->notify(back_at - now);
    return;
  }
  tlm::tlm_phase resp = tlm::BEGIN_RESP;
  sc_time delay = back_at - now;
  up_in->nb_transport_bw(*done.tx, resp, delay);  // the initiator completes it
}

void PcieLink::resume_down(const sc_time& delay) {
  dir_[1].arrival_event.notify(delay);
  actions_.at(sim_now() + delay, [this] {
    Direction& d = dir_[1];
    std::deque<Read*> held;
    held.swap(d.held_reads);
    for (Read* r : held) read_at_far_side(r);
  });
}

void PcieLink::deliver_due(int dir) {
  Direction& d = dir_[dir];
  const sc_time now = sim_now();
  while (!d.in_flight.empty() && d.in_flight.front().arrival <= now) {
    if (dir == 1 && !down_ready->mmio_ready(d.in_flight.front().addr)) {
      if (!d.held) ++down_stalls_;
      d.held = true;
      return;  // resume_down() wakes this again
    }
    d.held = false;
    land(d, dir, now);
  }
  notify_next_on_time(d, now);
}

void PcieLink::land_due(const sc_time& by) {
  Direction& d = dir_[0];
  // Host memory asking while the link lands a write: that write is next.
  if (d.landing || d.in_flight.empty() || !d.in_flight.front().quiet) return;
  // Quiet writes only: one that lands on time, due by then, is the link's own to land at its
  // wake-up (it may tell someone), and the writes behind it wait for it.
  while (!d.in_flight.empty() && d.in_flight.front().quiet && d.in_flight.front().arrival <= by) land(d, 0, by);
}

// Asked of up_lands_quietly, whose answer changes only as no_longer_quiet tells (a watch, an unmap,
// an attach): the last few runs of pages it found quiet whole are remembered until then (device
// writes come in runs into a few rings: CQs, EQs).
bool PcieLink::lands_quietly(uint64_t addr, uint64_t len) {
  if (!up_lands_quietly || !on_upstream_landed.empty() || len == 0) return false;
  const uint64_t last = addr + len - 1;
  if (last < addr) return false;  // wraps past 2^64: an address error
  if (quiet_pages_.find(addr, last)) return true;
  constexpr uint64_t kPage = 4096;
  const uint64_t first_page = addr & ~(kPage - 1), end = (last | (kPage - 1)) + 1;
  if (end > first_page && up_lands_quietly(first_page, end - first_page)) {
    quiet_pages_.keep(first_page, end - 1, {});
    return true;
  }
  return up_lands_quietly(addr, len);
}

void PcieLink::no_longer_quiet(uint64_t addr, uint64_t len) {
  quiet_pages_.forget(addr, addr + len - 1);
  land_due();  // what arrived by now has landed before the change
  Direction& d = dir_[0];
  bool changed = false;
  for (size_t i = 0; i < d.in_flight.size(); ++i) {
    Posted& p = d.in_flight.at(i);
    if (!p.quiet || !ranges_overlap(p.addr, p.len, addr, len)) continue;
    p.quiet = false;
    --quiet_in_flight_;
    ++d.on_time;
    changed = true;
  }
  if (changed) notify_next_on_time(d, sim_now());
}

void PcieLink::notify_next_on_time(Direction& d, const sc_time& now) {
  if (d.on_time == 0) return;
  for (size_t i = 0; i < d.in_flight.size(); ++i)
    if (const Posted& p = d.in_flight.at(i); !p.quiet) {
      d.arrival_event.notify(p.arrival - now);  // an earlier one replaces a later pending one
      return;
    }
}

// The head write lands at the far side now.
void PcieLink::land(Direction& d, int dir, const sc_time& now) {
  if (d.in_flight.front().quiet && land_by_dmi(d.in_flight.front())) {
    const Posted& q = d.in_flight.front();
    const DmaSource source = q.source;
    const uint32_t id = q.id;
    const uint64_t addr = q.addr;
    const sc_time arrival = q.arrival;
    d.in_flight.pop_front();
    --quiet_in_flight_;  // its credits' return was scheduled when it was sent
    on_upstream_landed(source, id, addr);
    on_upstream_landed_at(source, id, addr, arrival);
    return;
  }
  Posted p = std::move(d.in_flight.front());
  d.in_flight.pop_front();
  if (p.quiet)
    --quiet_in_flight_;
  else
    --d.on_time;
  // The far side has taken it: its credits are on their way back.
  if (!p.returned) d.credits.give_back(now + cfg_.latency, p.tlps, Credits::data_credits(p.len), 0);
  tlm::tlm_generic_payload& tx = delivery_tx_;
  tx.set_command(tlm::TLM_WRITE_COMMAND);
  tx.set_address(p.addr);
  tx.set_data_ptr(p.data());
  tx.set_data_length(p.len);
  tx.set_streaming_width(p.len);
  tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time zero = sc_core::SC_ZERO_TIME;
  d.landing = true;
  out(dir)->b_transport(tx, zero);
  d.landing = false;
  if (tx.is_response_ok() && dir == 0) {
    on_upstream_landed(p.source, p.id, p.addr);
    on_upstream_landed_at(p.source, p.id, p.addr, p.arrival);
  }
  if (!tx.is_response_ok() && dir == 0) {
    up_errors->upstream_write_failed(p.source, p.id, p.addr);
    on_upstream_write_failed(p.source, p.id, p.addr);
  }
}

// Only quiet writes come here: plain host memory, mapped and watched by no one when sent (a watch
// or an unmapping since has made them loud or revoked the page), so a copy is all the landing does.
bool PcieLink::land_by_dmi(const Posted& p) {
  if (p.len == 0 || p.len > p.small.size()) return false;
  const auto* page = granted_page(p.addr, p.addr + p.len - 1);
  if (!page) return false;
  std::memcpy(page->value + (p.addr - page->first), p.small.data(), p.len);
  ++landed_by_dmi_;
  return true;
}

// The granted page holding [first, last]: one kept, else asked of host memory (and kept, in place
// of the oldest); null if host memory grants none.
const RecentRanges<uint8_t*>::Range* PcieLink::granted_page(uint64_t first, uint64_t last) {
  if (const auto* page = up_dmi_.find(first, last)) return page;
  tlm::tlm_generic_payload& tx = delivery_tx_;
  tx.set_command(tlm::TLM_WRITE_COMMAND);
  tx.set_address(first);
  tlm::tlm_dmi dmi;
  if (!up_out->get_direct_mem_ptr(tx, dmi) || !dmi.is_write_allowed() || first < dmi.get_start_address() ||
      last > dmi.get_end_address())
    return nullptr;
  return &up_dmi_.keep(dmi.get_start_address(), dmi.get_end_address(), dmi.get_dmi_ptr());
}

void PcieLink::invalidate_up_dmi(sc_dt::uint64 start, sc_dt::uint64 end) { up_dmi_.forget(start, end); }

}  // namespace vhca

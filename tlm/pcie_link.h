// PCIe link timing between the HCA and the host (root complex + memory).
//
// Two directions, each with its own serializer: upstream (device -> host: DMA writes, DMA read
// requests, MSI-X writes) and downstream (host -> device: MMIO writes, MMIO read requests, DMA read
// completions). A transaction is split into TLPs (writes by max payload size, reads by max read
// request size, completions by the read completion size); each TLP occupies its direction for
// (payload + overhead) / bandwidth, then arrives `latency` later.
//
// Posted writes return at once (the initiator does not wait); their data lands at the far side at
// its arrival time, in order. A non-posted read either blocks the calling SC_THREAD until its
// completion has arrived (b_transport), or, upstream, follows the TLM-2.0 base protocol without a
// thread (nb_transport_fw BEGIN_REQ, answered END_REQ at once; BEGIN_RESP on the backward path
// once the completion is on the wire, its annotated delay giving the arrival; for a read marked
// EarlyCompletion, at its far-side stage with the completion placed to enter later, and its new
// arrival told through the mark if a TLP entering earlier passes it): the device's data path reads
// that way. Both run the same stages, timed by the link's action queue. Before a read executes at
// the far side, every posted write that arrived no later is applied (PCIe ordering: a read does
// not pass a posted write).
//
// Same-instant order: TLPs entering one direction at one instant take the wire by a fixed rule,
// not in the order SystemC ran their senders: completions first (in the order the link made
// them), then posted writes, then read requests (a read never passes a posted write), each kind
// by the sender process's name, each sender's in the order it sent them (a fixed-priority
// arbiter in front of the serializer). A TLP entering after others of that instant that it goes
// before takes its place: they leave later, and their arrivals, credit returns and far-side
// stages move with them (docs/decisions.md 40). A posted write may be sent ahead of its time,
// entering at now + its annotated delay (the DMA engine's writes issued ahead, decisions.md 41);
// a TLP entering before that instant passes it the same way.
//
// Flow control: each direction has the far receiver's posted header / data and non-posted header
// credits (tlm/pcie_credits.h). A TLP takes its credits when it is sent and they return one link
// latency after the far side has taken it (an UpdateFC DLLP on the way back); a write held at the
// device (a full doorbell FIFO) keeps its credits, so its sender stalls in turn.
//
// Quiet upstream writes (tlm/pending_writes.h): a device write into plain host memory that no one
// is told of when it lands (up_lands_quietly says so, and no on_upstream_landed observer is
// attached) does not wake the link at its arrival. Its credits' return is scheduled when it is
// sent (they come back one latency after its arrival, as for any write), and it lands when a
// reader of host memory asks (up_pending), when the next upstream write is sent, or with the next
// write that lands on time, whichever comes first: writes land in order, and what waits in flight
// is what the link's bandwidth and latency hold, as when every write woke the link.
#pragma once
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <vector>

#include "model/common/action_queue.h"
#include "model/common/object_pool.h"
#include "model/common/observers.h"
#include "model/common/sim_now.h"
#include "model/common/slot_ring.h"
#include "tlm/credit_returns.h"
#include "tlm/early_completion.h"
#include "tlm/pcie_credits.h"
#include "tlm/pcie_flow.h"
#include "tlm/pending_writes.h"
#include "tlm/posted_tag.h"
#include "tlm/recent_ranges.h"
#include "tlm/wire_time.h"

namespace vhca {

struct PcieLinkConfig {
  // Gen4 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction.
  double gbytes_per_s = 31.5;
  // One-way latency across the link and root complex (device <-> memory controller). With the
  // host memory latency this gives ~520 ns for a 64 B DMA read, in the range measured by
  // Neugebauer et al., "Understanding PCIe performance for end host networking" (SIGCOMM 2018).
  sc_core::sc_time latency{200, sc_core::SC_NS};
  // Extra time a read spends at the far side (host DRAM access, or device register read).
  sc_core::sc_time read_access{120, sc_core::SC_NS};
  uint32_t max_payload = 256;       // MPS
  uint32_t max_read_request = 512;  // MRRS
  uint32_t completion_size = 256;   // completions are split at this size
  // Per-TLP overhead on the wire: 4 B framing + 2 B sequence + 4 B LCRC + 16 B 4DW header (writes,
  // read requests) or 12 B 3DW header (completions), rounded as in the timing guide.
  uint32_t request_overhead = 24;
  uint32_t completion_overhead = 20;
  // Credits the receiver at each end advertises (assumption: no datasheet figure is used). The
  // host's root port: enough to cover the upstream bandwidth-delay product (31.5 GB/s x ~410 ns
  // credit loop = ~13 KB, 50 TLPs of 256 B) 2.5 times over, so credits never limit a healthy
  // link. The HCA's BAR: 32 TLPs of doorbells and 1 KiB of data.
  uint32_t up_posted_headers = 128, up_posted_data = 2048, up_nonposted_headers = 64;
  uint32_t down_posted_headers = 32, down_posted_data = 64, down_nonposted_headers = 16;
};

class PcieLink : public sc_core::sc_module, public PendingWritesIf, public PostedResumeIf {
  // A direction's entry (0 up, 1 down): the forward interface its target socket exports, calling
  // the link straight (a convenience socket's dispatch cost a tenth of a posted write's path).
  // One type a direction: vhca-bench tells the host's doorbells by Entry<1>::b_transport.
  template <int kDir>
  class Entry : public tlm::tlm_fw_transport_if<> {
   public:
    explicit Entry(PcieLink& link) : link_(link) {}
    void b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) override { link_.transport(kDir, tx, delay); }
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& tx, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override {
      return link_.nb_transport(kDir, tx, phase, delay);
    }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }

   private:
    PcieLink& link_;
  };
  Entry<0> up_entry_{*this};
  Entry<1> down_entry_{*this};

 public:
  // Device side of the upstream direction, and its exit to the host router.
  tlm::tlm_target_socket<> up_in{"up_in"};
  // Each direction's credits, for the writers that post into it: the HCA's DMA engine upstream,
  // the host CPU downstream.
  sc_core::sc_export<PcieCreditIf> up_credits{"up_credits"};
  sc_core::sc_export<PcieCreditIf> down_credits{"down_credits"};
  tlm_utils::simple_initiator_socket<PcieLink> up_out{"up_out"};
  // Readers of host memory ask here that quiet upstream writes due by now be landed first.
  sc_core::sc_export<PendingWritesIf> up_pending{"up_pending"};
  // Host side of the downstream direction, and its exit to the device BAR.
  tlm::tlm_target_socket<> down_in{"down_in"};
  tlm_utils::simple_initiator_socket<PcieLink> down_out{"down_out"};
  // Posted-write flow control toward the device (tlm/pcie_flow.h): asked before each downstream
  // posted write is delivered. While it says no, that write and everything behind it wait in the
  // link (a later read too: it may not pass them) until the device calls down_resume.
  sc_core::sc_port<PostedReadyIf> down_ready{"down_ready"};
  sc_core::sc_export<PostedResumeIf> down_resume{"down_resume"};
  // A posted upstream write that failed where it landed (unmapped host memory) is reported here,
  // as a PCIe error message would report it to the device.
  sc_core::sc_port<WriteErrorIf> up_errors{"up_errors"};

  SC_HAS_PROCESS(PcieLink);
  PcieLink(const sc_core::sc_module_name& name, const PcieLinkConfig& cfg = {});
  const PcieLinkConfig& config() const { return cfg_; }

  // Observation: a device write failed where it landed, told at that instant (after up_errors).
  // A downstream write that fails is the device's to report (BAR0 counts it in BAD_ACCESSES).
  Observers<DmaSource, uint32_t, uint64_t> on_upstream_write_failed;  // (source, id, address)
  // Observation: a device write has landed in host memory, told at that instant. While any is
  // attached, every write lands on time (none is quiet). Attach before the run.
  Observers<DmaSource, uint32_t, uint64_t> on_upstream_landed;  // (source, id, address)
  // The same, told with the arrival time, and for a quiet write perhaps later than it: when it
  // lands, before anyone reads host memory (tools that measure when a CQE became visible, and use
  // the figure when the host polls it). These do not stop writes from landing quietly.
  Observers<DmaSource, uint32_t, uint64_t, const sc_core::sc_time&> on_upstream_landed_at;
  // Would an upstream write of `len` bytes at `addr` land quietly: plain, mapped host memory
  // that nothing watches? Unset: every write lands on time by the link's own wake-up.
  std::function<bool(uint64_t addr, uint64_t len)> up_lands_quietly;

  // PendingWritesIf (through up_pending).
  void land_due(const sc_core::sc_time& by) final;  // final: the link's own calls are direct
  void land_due() { land_due(sim_now()); }
  void no_longer_quiet(uint64_t addr, uint64_t len) override;
  const size_t& quiet_in_flight() const override { return quiet_in_flight_; }

  // PostedResumeIf (through down_resume).
  void resume_down(const sc_core::sc_time& delay) override;
  uint64_t down_stalls() const { return down_stalls_; }
  // Posted writes sent without their credits (an initiator that did not ask can_post): counted,
  // and logged, never refused.
  uint64_t credit_overdrafts(bool upstream) const { return dir_[upstream ? 0 : 1].credits.overdrafts; }
  uint32_t posted_data_in_use_max(bool upstream) const { return dir_[upstream ? 0 : 1].credits.pd_max; }
  uint32_t nonposted_waits(bool upstream) const { return dir_[upstream ? 0 : 1].credits.np_waits; }

  // When every posted write now in flight in one direction will have landed (now, if none):
  // posted writes land in order.
  sc_core::sc_time posted_landed_by(bool upstream) const {
    const Direction& d = dir_[upstream ? 0 : 1];
    return d.in_flight.empty() ? sim_now() : std::max(sim_now(), d.in_flight.back().arrival);
  }
  // Time to put `bytes` of TLP on the wire in one direction.
  sc_core::sc_time wire_time(uint64_t bytes) const;
  uint64_t bytes_on_wire(bool upstream) const { return dir_[upstream ? 0 : 1].wire_bytes; }
  uint64_t landed_by_dmi() const { return landed_by_dmi_; }  // quiet writes copied into a granted page
  // TLPs that took the place of others placed before them on their direction: at the same
  // instant by the rule (sent later by SystemC's process order, they go first), or entering
  // before a write issued ahead for a later edge.
  uint64_t placed_before_others() const { return passes_; }
  // Read completions told to their reader at the far-side stage (tlm/early_completion.h), and
  // those of them a TLP entering earlier then passed (their arrival told again).
  uint64_t completions_told_early() const { return told_early_; }
  uint64_t early_completions_moved() const { return early_moved_; }

 private:
  struct Posted {
    sc_core::sc_time arrival;
    uint32_t tlps;  // posted header credits it holds (its data credits follow from its length)
    uint64_t addr;
    // The payload: up to 64 bytes (CQEs, EQEs, MSI-X and doorbell writes) in place, larger ones on
    // the heap, so the common write allocates nothing.
    uint32_t len = 0;
    std::array<uint8_t, 64> small{};
    std::vector<uint8_t> large;
    uint8_t* data() { return len <= small.size() ? small.data() : large.data(); }
    DmaSource source;
    uint32_t id;
    bool quiet = false;     // lands when a reader asks (or with a write behind it that lands on time)
    bool returned = false;  // its credits' return is scheduled (a quiet write's, when it was sent)
  };
  // One direction's credits: what is in use, and the returns on their way back.
  class Credits : public PcieCreditIf {
   public:
    Credits(uint32_t ph, uint32_t pd, uint32_t nph, uint32_t mps, const sc_core::sc_time& latency)
        : ph_(ph), pd_(pd), nph_(nph), mps_(mps), latency_(latency) {
      returns_.on_return([this] { returned_.notify(sc_core::SC_ZERO_TIME); });  // threads, before the methods
    }
    bool can_post(uint64_t bytes) const override;
    bool can_post_by(uint64_t bytes, const sc_core::sc_time& at) const override;
    bool has_room(uint64_t bytes) const override;
    // can_post, in credits. Inline: asked twice a write (the DMA engine's question, the link's take).
    bool fits(uint32_t headers, uint32_t data) const {
      returns_.apply_due([this](const Amount& a) { release(a); });
      if (room_for(ph_used_, pd_used_, headers, data)) return true;
      returns_.want_wake();
      return false;
    }
    // Whether a TLP needing `headers` and `data` posted credits fits beside those in use.
    bool room_for(uint32_t ph_used, uint32_t pd_used, uint32_t headers, uint32_t data) const {
      return ph_used + headers <= ph_ && pd_used + data <= pd_;
    }
    // transport() notifies a write's arrival (at least a latency after its entry) and moves later
    // what it passes on the wire: nothing sooner.
    sc_core::sc_time posted_effects_after() const override { return latency_; }
    const sc_core::sc_event& returned_event() const override { return returned_; }
    void on_return(std::function<void()> wake) override { returns_.on_return(std::move(wake)); }
    bool can_read() const;
    // Posted header credits (one per TLP of at most the max payload size) a write of `bytes` needs.
    uint32_t headers(uint64_t bytes) const { return uint32_t(std::max<uint64_t>(1, (bytes + mps_ - 1) / mps_)); }
    uint32_t take_posted(uint64_t bytes);  // returns its header credits (the TLPs it makes)
    // The same for a write that enters the wire at `enters`, later, with nothing else happening
    // meanwhile (a host core's write issued ahead): its high-water mark counts as at its entry.
    uint32_t take_posted_ahead(uint64_t bytes, const sc_core::sc_time& enters);
    void take_nonposted() { ++nph_used_; }
    // Schedule the return of a TLP's credits at `at`. Returns are applied lazily, when credits
    // are asked for; only a refused sender makes the link wake up (once) when they arrive.
    void give_back(sc_core::sc_time at, uint32_t ph, uint32_t pd, uint32_t nph) { returns_.give_back(at, {ph, pd, nph}); }
    // A return given back for `from` comes back at `to` (its TLP was passed on the wire).
    void move_return(sc_core::sc_time from, sc_core::sc_time to, uint32_t ph, uint32_t pd, uint32_t nph) {
      returns_.move(from, to, {ph, pd, nph});
    }
    void process_returns() {
      returns_.process([this](const Amount& a) { release(a); });
    }
    sc_core::sc_event& return_event() { return returns_.due_event(); }
    static uint32_t data_credits(uint64_t bytes) { return uint32_t((bytes + 15) / 16); }
    uint64_t overdrafts = 0;
    uint32_t pd_max = 0, np_waits = 0;

   private:
    struct Amount {
      uint32_t ph, pd, nph;
      bool operator==(const Amount& o) const { return ph == o.ph && pd == o.pd && nph == o.nph; }
    };
    uint32_t ph_, pd_, nph_, mps_;
    sc_core::sc_time latency_;
    mutable uint32_t ph_used_ = 0, pd_used_ = 0, nph_used_ = 0;
    // Credits coming back release what they held.
    void release(const Amount& a) const {
      ph_used_ -= a.ph;
      pd_used_ -= a.pd;
      nph_used_ -= a.nph;
    }
    CreditReturns<Amount> returns_;
    sc_core::sc_event returned_;
  };

  // A non-posted read on its way: its request credits, the far side, the completion back. Kept
  // in a pool: the stages pass a pointer (no allocation per stage).
  struct Read {
    tlm::tlm_generic_payload* tx = nullptr;
    int dir = 0;
    uint32_t requests_left = 0;  // request TLPs still waiting for a non-posted header credit
    // A blocking read's waiter (null: answer on the non-blocking backward path).
    sc_core::sc_event* waiter = nullptr;
    sc_core::sc_time at_far_side{};  // when its last request TLP arrives
  };

  // A TLP (or a transaction's TLPs) placed on a direction's wire that may still be passed: it
  // enters at `at`, now or later (a write issued ahead for the next edge, a completion told early).
  struct Placed {
    enum class Kind : uint8_t { completion, write, read } kind;
    const sc_core::sc_object* sender;  // the process that sent it (null: none, before the run)
    Read* read;               // a read's request TLPs (null for a write or a completion)
    sc_core::sc_time length;  // its time on the wire
    sc_core::sc_time at;      // when it enters the link
    sc_core::sc_time end{};   // when its last TLP has left the serializer
    uint64_t order = 0;       // a completion's: the link made it n-th (its read's far-side stage)
    EarlyCompletion* early = nullptr;  // a completion told to its reader before it entered
    // The rule: earlier entry first; at one instant completions (in the order the link made
    // them), then posted writes, then read requests (PCIe: a read request never passes a posted
    // write; a posted write may pass a read), each kind by sender name, each sender's TLPs in
    // its own order.
    bool goes_before(const Placed& o) const {
      if (at != o.at) return at < o.at;
      if (kind != o.kind) return kind < o.kind;
      if (kind == Kind::completion) return order < o.order;
      if (sender == o.sender) return false;
      return !o.sender || (sender && std::strcmp(sender->name(), o.sender->name()) < 0);
    }
  };

  struct Direction {
    Direction(uint32_t ph, uint32_t pd, uint32_t nph, uint32_t mps, const sc_core::sc_time& latency)
        : credits(ph, pd, nph, mps, latency), in_flight(ph) {}
    sc_core::sc_time free_at;  // when its serializer can start the next TLP
    Credits credits;
    // In arrival order. Bounded by the header credits, except that quiet writes give theirs back
    // at arrival and wait here until someone looks (the ring then grows to that high-water mark).
    SlotRing<Posted> in_flight;
    size_t on_time = 0;  // writes in flight that are not quiet: the arrival event is for the first
    sc_core::sc_event arrival_event;
    bool held = false;
    bool landing = false;  // a write of this direction is landing: a request to land is for this one
    uint64_t wire_bytes = 0;
    // What was placed and may still be passed (entering now or later, and perhaps a few that
    // entered earlier, not yet trimmed), in wire order from `batch_base` (the serializer's free
    // time before the first of them), and how many of those are posted writes (the tail of
    // in_flight, in the same order).
    sc_core::sc_time batch_base;
    std::vector<Placed> batch;
    size_t batch_writes = 0;
    SlotRing<Read*> credit_waits;  // reads waiting for non-posted credits, in issue order
    std::deque<Read*> held_reads;    // reads at the far side behind a held posted write
  };

  void transport(int dir, tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  tlm::tlm_sync_enum nb_transport(int dir, tlm::tlm_generic_payload& tx, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  // The stages of a read: credits for its request TLPs, the requests on the wire, the access at
  // the far side (after the posted writes that arrived no later), the completion back.
  void start_read(tlm::tlm_generic_payload& tx, int dir, sc_core::sc_event* waiter);
  void take_read_credits(int dir);
  void send_read_requests(Read* r);
  void read_at_far_side(Read* r);
  // The completion of `r`, made `order`-th, enters the return wire at `enters` (now, or later when
  // told early: `early`).
  void send_completion(Read* r, const sc_core::sc_time& enters, uint64_t order, EarlyCompletion* early);
  // The time `len` bytes take on the wire as TLPs of at most `chunk` payload each (counted in the
  // direction's wire bytes).
  sc_core::sc_time tlp_time(Direction& d, uint64_t len, uint32_t chunk, uint32_t overhead) {
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    uint64_t remaining = len;
    do {
      const uint64_t n = std::min<uint64_t>(remaining, chunk);
      t += wire_time_(n + overhead);
      d.wire_bytes += n + overhead;
      remaining -= n;
    } while (remaining > 0);
    return t;
  }
  // Puts a TLP that enters at `at` on the wire by the rule (Placed::goes_before); returns when its
  // last byte has left (it arrives a latency later). A posted write is the caller's, appended to
  // in_flight (it may move there: it goes before writes placed earlier that it passes).
  sc_core::sc_time place(Direction& d, const sc_core::sc_time& at, Placed::Kind kind, Read* read,
                         const sc_core::sc_time& length, uint64_t order = 0, EarlyCompletion* early = nullptr) {
    Placed entry{kind, sender(), read, length, at, {}, order, early};
    if (!d.batch.empty()) {
      if (d.batch.back().at < sim_now()) {  // all entered before now: none can be passed
        d.batch.clear();
        d.batch_writes = 0;
      } else if (entry.goes_before(d.batch.back())) {
        return place_passing(d, entry);
      } else if (d.batch.size() >= 8) {
        trim(d);
      }
    }
    if (d.batch.empty()) d.batch_base = d.free_at;
    entry.end = std::max(at, d.free_at) + length;
    if (kind == Placed::Kind::write) {
      ++d.batch_writes;
      d.in_flight.back().arrival = entry.end + cfg_.latency;
    }
    d.batch.push_back(entry);
    d.free_at = entry.end;
    return entry.end;
  }
  // Drops the entries that entered before now (no TLP placed from now on goes before them).
  void trim(Direction& d);
  sc_core::sc_time place_passing(Direction& d, Placed entry);
  void passed(Direction& d, size_t write_index, const Placed& moved, const sc_core::sc_time& by);
  void reach_far_side(Read* r);
  static const sc_core::sc_object* sender() { return sc_core::sc_get_current_process_b(); }
  // Request TLPs a read of `len` bytes takes (one per max read request).
  uint32_t read_requests(uint64_t len) const {
    return uint32_t(std::max<uint64_t>(1, (len + cfg_.max_read_request - 1) / cfg_.max_read_request));
  }
  void deliver_due(int dir);
  void land(Direction& d, int dir, const sc_core::sc_time& now);
  // A quiet upstream write of at most 64 bytes copied straight into a host memory page granted by
  // DMI (the page's pointer is kept until host memory revokes it); false: land it by b_transport.
  bool land_by_dmi(const Posted& p);
  void invalidate_up_dmi(sc_dt::uint64 start, sc_dt::uint64 end);
  // The granted page holding [first, last] (its value: the page's storage), or null.
  const RecentRanges<uint8_t*>::Range* granted_page(uint64_t first, uint64_t last);
  void notify_next_on_time(Direction& d, const sc_core::sc_time& now);
  void deliver_up() { deliver_due(0); }
  void deliver_down() { deliver_due(1); }
  void returns_up() { dir_[0].credits.process_returns(); }
  void returns_down() { dir_[1].credits.process_returns(); }
  tlm_utils::simple_initiator_socket<PcieLink>& out(int dir) { return dir == 0 ? up_out : down_out; }

  bool due_writes_waiting(const Direction& d) const {
    return !d.in_flight.empty() && d.in_flight.front().arrival <= sim_now();
  }

  PcieLinkConfig cfg_;
  WireTime wire_time_;
  ActionQueue actions_{"actions"};
  // Every read record made, and those free for reuse: the link owns them all, so reads still in
  // flight when the simulation ends are freed with it.
  ObjectPool<Read> reads_;
  Direction dir_[2];  // 0 upstream, 1 downstream
  uint64_t down_stalls_ = 0;
  tlm::tlm_generic_payload delivery_tx_;  // reused for every delivered posted write
  // Host memory pages granted for quiet upstream writes (a CQ ring, an EQ ring: a few pages take
  // nearly all of them), dropped when host memory revokes them.
  RecentRanges<uint8_t*> up_dmi_;
  uint64_t landed_by_dmi_ = 0;
  uint64_t passes_ = 0;
  uint64_t completions_made_ = 0;                     // orders the completions (Placed::order)
  uint64_t told_early_ = 0, early_moved_ = 0;         // completions told early; of them, passed
  size_t quiet_in_flight_ = 0;  // upstream
  bool lands_quietly(uint64_t addr, uint64_t len);
  struct None {};
  RecentRanges<None> quiet_pages_;  // runs of pages up_lands_quietly found quiet whole
};

}  // namespace vhca

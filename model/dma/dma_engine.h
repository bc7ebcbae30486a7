// The DMA engine: one ordered posted-write channel shared by every block (CQE, EQE, MSI-X and
// command writes leave in the order they were queued: an EQE can never pass its CQE, an MSI-X
// message never its EQE) issuing at most one write per cycle; data-path reads, many in flight,
// each finishing by a callback on the cycle its data is usable (TLM-2.0 non-blocking, no thread
// held); and one read channel that serves consumer-index refreshes before firmware reads, one
// read at a time.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <vector>

#include "model/common/action_queue.h"
#include "model/common/object_pool.h"
#include "model/common/sim_clock.h"
#include "model/common/slot_ring.h"
#include "model/common/stream.h"
#include "model/common/wakeup.h"
#include "model/cq/cq_types.h"
#include "tlm/early_completion.h"
#include "tlm/pcie_credits.h"
#include "tlm/posted_tag.h"

namespace vhca {

struct DmaEngineConfig {
  size_t write_queue_depth = 64;
  size_t ci_request_depth = 4;  // s_ci_req: consumer-index refresh reads from the CQ writer (assumption)
  // Simulation speed only (hca.writes_ahead): a CQE pushed into the empty write queue is put on
  // the link at once, entering it on the next cycle's edge, its turn, instead of waking the
  // write channel for that turn; so is an EQE, an MSI-X message or a payload write (a receive's,
  // an RDMA WRITE's, a READ response's) when the blocks that push the writes ranked before it say
  // they push nothing more on that cycle (rank guards). Results are the same either way
  // (decisions.md 41, 43, 47, 48).
  bool writes_ahead = true;
  // Simulation speed only (hca.early_completions): a data-path read's completion is told at the
  // read's far-side stage, with its arrival, instead of when it enters the wire, and told again
  // if a TLP entering before it passes it (tlm/early_completion.h). Same results (decisions.md 44).
  bool early_completions = true;
  // Simulation speed only (hca.wait_for_credits): the write channel is not woken for a turn whose
  // head the link's credits cannot take by then (the returns due by that edge counted); the
  // credits' return wakes it, as it would after that turn. Same results (decisions.md 46).
  bool wait_for_credits = true;
};

class DmaEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket{"socket"};
  StreamIn<DmaWrite> s_write;       // the ordered posted-write channel, every writer's input
  StreamIn<CiRequest> s_ci_req;     // consumer-index refreshes from the CQ writer
  StreamOut<CiResponse> m_ci_rsp{"m_ci_rsp"};
  // The upstream link's flow-control credits: a write waits at the head of the queue until the
  // link can take it (unbound: no credit limit, as when the HCA stands alone).
  sc_core::sc_port<PcieCreditIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND> credits{"credits"};

  SC_HAS_PROCESS(DmaEngine);
  DmaEngine(const sc_core::sc_module_name& name, const SimClock& clock, const DmaEngineConfig& cfg = {});
  ~DmaEngine() override;

  // Firmware helper, called from an SC_THREAD (the command unit): a blocking read that returns
  // on the cycle its completion has arrived. (Its writes go through its own port into s_write.)
  bool read_blocking(uint64_t addr, uint8_t* out, uint32_t len);
  // The firmware read without the wait: from any process, it queues the read on the read channel,
  // to be issued once every write queued before it has been (so that it observes them), and
  // returns. `done(ok, usable)` runs as the completion arrives, with the cycle from which its data
  // is usable (the channel is free again from then): a waiting thread is woken for that cycle or
  // later (the command unit: after its latency), once, and nothing else runs on that cycle for it.
  using FirmwareDone = std::function<void(bool ok, uint64_t usable)>;
  void firmware_read(uint64_t addr, uint8_t* out, uint32_t len, FirmwareDone done);
  // Data-path read, with others in flight (PCIe allows many outstanding reads): `done(ok)` runs
  // on the cycle its data is usable (from the engine's own process, or from that of a block that
  // answers the usable reads first: it may start more reads, but not wait). `fence`: first wait
  // for every write queued before it to be issued, so that the read observes them (RDMA READ
  // after WRITE, atomics). `out` must stay valid until done.
  using ReadDone = std::function<void(bool ok)>;
  void read(uint64_t addr, uint8_t* out, uint32_t len, bool fence, ReadDone done);
  // Answers now the reads whose completion is due on this edge (the engine's completion queue, in
  // the order its own process would run it: data-path reads' dones, and the read channel's
  // consumer-index refreshes and refused firmware reads): for a block that decides on an edge from
  // what the reads it waits for bring, so that whether it saw them does not depend on which
  // process SystemC runs first (the transport, decisions.md 48).
  size_t answer_usable_reads() { return completions_.run_due_now(); }  // how many were answered
  bool reads_usable() const { return completions_.due_now(); }

  // Writes queued so far, counted in push order from the first; writes_issued() is how many of
  // them, in that order, have all been issued to the link (same-cycle writes may leave in another
  // order than they were pushed: the stream orders them by source, see the constructor).
  uint64_t writes_issued() {
    settle_turn();  // a turn due on this cycle counts as run (the rule, settle_turn below)
    return issued_prefix_;
  }
  // The same without settling this cycle's turn: a count that may lag it, never pass it.
  uint64_t writes_known_issued() const { return issued_prefix_; }
  uint64_t writes_queued() const { return s_write->pushed(); }
  // Runs `then` (from the engine's process) once writes_issued() reaches `mark`; marks are taken
  // from writes_queued(), so they come in order.
  void when_issued(uint64_t mark, std::function<void()> then);
  uint64_t reads_issued() const { return reads_; }
  uint64_t read_errors() const { return read_errors_; }
  // Turns the link's credits held: activations that found no credits, and turns known before
  // their edge to find none (hca.wait_for_credits: the channel was not woken for them).
  uint64_t credit_stalls() const { return credit_stalls_; }
  uint64_t turns_slept_for_credits() const { return turns_slept_; }  // the second kind
  uint64_t writes_issued_ahead() const { return writes_ahead_; }
  // Of them, the EQEs and MSI-X messages.
  uint64_t events_issued_ahead() const { return events_ahead_; }
  // Of them, payload writes (a receive's; an RDMA WRITE's or a READ response's data, rank `other`)
  // gone ahead on their rank guards' word (pushed on that cycle).
  uint64_t payloads_issued_ahead() const { return payloads_ahead_; }
  // Lone EQEs and MSI-X messages that waited for their turn because a block of a rank before them
  // could still push on their cycle.
  uint64_t events_held_by_guards() const { return events_held_; }
  // A rank guard: `pushes_done_now()` is true when the one block that pushes writes of `source`
  // will push none more on the current cycle (it has acted on it, or is not due to). A write of a
  // later rank goes ahead only when every rank before it has a guard that says so; the CQE, the
  // first rank, needs none. Set at elaboration by the system that knows who pushes what; returns
  // the guard it replaces.
  std::function<bool()> set_rank_guard(DmaSource source, std::function<bool()> pushes_done_now);
  // Writes pushed for the turn of a write issued ahead that the queue's order would have put
  // before it: a rank guard broke its promise (always 0 unless one is wrong; logged as an error).
  uint64_t ahead_order_breaks() const { return ahead_order_breaks_; }

 private:
  struct FirmwareRead {
    uint64_t addr;
    uint8_t* out;
    uint32_t len;
    FirmwareDone done;
  };
  // A read on the link: its payload and what to do when it completes. Recycled.
  struct ReadSlot : tlm::tlm_generic_payload {
    ReadDone done;
    EarlyCompletion early;  // on the payload for its life
    uint64_t usable = 0;    // the cycle its data is usable, as last told (0: not told)
    ReadSlot() { set_extension(&early); }
    ~ReadSlot() override { clear_extension(&early); }  // a member: the payload must not free it
  };
  void write_step();
  // The write turn of cycle `now`: issues the head if it is due and the link has credits for it;
  // false if it had to wait for credits.
  bool write_turn(uint64_t now);
  void send(DmaWrite& w, const sc_core::sc_time& delay);
  // A write just pushed alone into the queue goes on the link now, entering it at `turn`'s edge,
  // if no write pushed later on this cycle could go before it.
  bool issue_ahead(uint64_t turn);
  bool ranks_before_done(DmaSource source);  // every rank before it has pushed all it will now
  bool may_go_ahead(const DmaWrite& w);      // alone in the queue, pushed on this edge
  void check_ahead_order(uint64_t ready);          // a push on the cycle writes issued ahead were pushed
  // The queue's head, held for credits that came back before the next edge, goes on the link
  // now, entering it at that edge's turn.
  bool issue_on_return();
  [[gnu::always_inline]] inline void send_head_ahead(uint64_t turn, const sc_core::sc_time& delay);
  // The rule for the one order SystemC would decide: on a cycle where the write turn is due, the
  // turn comes first. A block asking what has been issued runs a due turn that has not run yet,
  // or counts the write issued ahead for this cycle.
  void settle_turn();
  [[gnu::always_inline]] inline void count_ahead_issued(uint64_t now);
  void wake_for_head(uint64_t now);  // for the next turn the queue's head may take
  bool turn_finds_no_credits(uint64_t turn);  // known now: that turn would stall
  void end_of_elaboration() override;
  // `early_ok`: the link may tell its completion early (not the firmware's, told on at once).
  ReadSlot* issue(uint64_t addr, uint8_t* out, uint32_t len, ReadDone done, bool early_ok = true);
  // Its data is usable from `usable`: the completion runs on that edge, in the order of the moment
  // the link placed it. A later arrival told for it moves it (the action left behind does nothing).
  void finish_on(ReadSlot* slot, uint64_t usable);
  void finish_if_usable(ReadSlot* slot);
  bool read_ok(const ReadSlot& slot);  // counts and logs a failed read
  ReadDone release(ReadSlot* slot);     // back to the free slots; returns what it was to call
  tlm::tlm_sync_enum read_response(tlm::tlm_generic_payload& tx, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  void finish_read(ReadSlot* slot);
  void release_issue_waiters();
  // The read channel: a consumer-index refresh, else a firmware read, one at a time, on an edge.
  void serve_channel();
  void channel_done();
  void queue_firmware_read(FirmwareRead r);
  void firmware_done(bool ok, uint64_t usable);

  const SimClock& clock_;
  Wakeup write_wakeup_;
  Stream<DmaWrite>& writes_;  // s_write's stream, which it owns (asked many times a write: no port call)
  tlm::tlm_generic_payload write_tx_;  // reused: constructing a payload per write costs an allocation
  PostedTag write_tag_;  // write_tx_'s extension for the engine's life (set once, not per write)
  ActionQueue completions_{"read_completions"};  // reads, answered on the edge their data is usable
  // Every read slot made (the engine owns them, those with the link too); the free ones reused.
  ObjectPool<ReadSlot> slots_;
  // What waits for writes to be issued (fenced reads, held ACKs), in mark order.
  struct IssueWaiter {
    uint64_t mark;
    std::function<void()> then;
  };
  SlotRing<IssueWaiter> issue_waiters_;
  Wakeup channel_wakeup_;
  bool channel_busy_ = false;
  uint8_t ci_buf_[4] = {};
  std::optional<CiResponse> ci_held_;  // a refresh answer waiting for room in m_ci_rsp
  std::deque<FirmwareRead> firmware_reads_;
  FirmwareRead serving_;  // the firmware read on the channel (one at a time)
  ReadSlot* firmware_slot_ = nullptr;  // its payload while on the link
  uint64_t channel_free_at_ = 0;       // the cycle the last firmware read's data is usable
  void note_issued(uint64_t seq);
  uint64_t issued_prefix_ = 0;             // every write of push order <= this has been issued
  std::vector<uint64_t> issued_ahead_;     // issued writes past the prefix (same-cycle reorders)
  uint64_t reads_ = 0, read_errors_ = 0, credit_stalls_ = 0;
  const bool writes_ahead_on_;
  const bool early_completions_on_;
  const bool wait_for_credits_on_;
  bool held_for_credits_ = false;  // a turn has found no credits since the queue last emptied
  uint64_t turns_slept_ = 0;
  uint64_t slept_turn_ = 0;  // the last turn counted as slept through
  // The turns of the last write issued ahead and of the one before it: a write pushed behind one
  // issued ahead for the next edge goes ahead too, for the turn after, so two may be on the link
  // before their turns (the turns of the next two edges).
  uint64_t ahead_cycle_ = 0, prev_ahead_cycle_ = 0;
  // Those not yet counted as issued (at most those two), oldest first.
  struct Ahead {
    uint64_t cycle = 0, seq = 0;
    uint64_t ready = 0;  // the cycle its push made it visible from
    uint64_t order = 0;  // its same-cycle order (0: pushed on an earlier cycle, nothing sorts before)
  };
  std::array<Ahead, 2> pending_{};
  uint32_t pending_count_ = 0;
  // The first turn from `turn` on that no write issued ahead has taken.
  uint64_t free_turn(uint64_t turn) const {
    while (turn == prev_ahead_cycle_ || turn == ahead_cycle_) ++turn;
    return turn;
  }
  uint64_t writes_ahead_ = 0, events_ahead_ = 0, events_held_ = 0, ahead_order_breaks_ = 0, payloads_ahead_ = 0;
  static constexpr size_t kRanks = 8;                   // DmaSource values, 1..7
  std::array<std::function<bool()>, kRanks> rank_guards_;
};

}  // namespace vhca

// Items that producers push into one shared stream on the same cycle are queued in a fixed order
// (the stream's rank of the item, then the producer's tiebreak, then push order), not in the
// order SystemC happened to run the producers: results do not depend on the kernel's scheduling.
// The DMA engine's issue marks (fences, ACK-after-data) name writes in push order, so a write
// ranked ahead of one pushed before it on the same cycle does not release that one's mark early.
#include <algorithm>

#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
struct Item {
  uint32_t rank = 0;
  char name = '?';
};

// The names of `s`'s items from the head, popping them all (on a cycle after they were pushed).
std::string drain_names(Stream<Item>& s, uint64_t cycle) {
  std::string names;
  while (s.ready(cycle)) names += s.pop(cycle).name;
  return names;
}

// A booted device left idle, on a fresh cycle: host memory for writes pushed by hand.
uint64_t booted_idle_device() {
  boot();
  wait_us(2);
  const uint64_t buf = sys().memory.allocate(4096);
  sys().wait_cycle(sys().cycle() + 1);
  return buf;
}

DmaWrite write_to(uint64_t addr, DmaSource source) {
  DmaWrite w;
  w.addr = addr;
  w.len = 8;
  w.source = source;
  return w;
}
}  // namespace

TEST_CASE("same-cycle pushes into a shared stream queue in rank, tiebreak and push order, whichever producer ran first") {
  Stream<Item> s("shared", 8);
  s.same_cycle_rank = [](const Item& i) { return i.rank; };
  // Cycle 10: one producer's two items, then another's ranked ahead; the first producer's pair
  // keeps its order. Cycle 11: the same three, pushed the other way round.
  s.push({2, 'a'}, 10);
  s.push({2, 'b'}, 10);
  s.push({1, 'c'}, 10);
  s.push({1, 'c'}, 11);
  s.push({2, 'a'}, 11);
  s.push({2, 'b'}, 11);
  // An item of a later cycle never passes one of an earlier cycle, whatever its rank.
  s.push({0, 'z'}, 12);
  CHECK(drain_names(s, 13) == "cabcabz");
  // Equal ranks: the producer's tiebreak decides, then push order.
  s.push({0, 'r'}, 20, 1);
  s.push({0, 'q'}, 20, 0);
  s.push({0, 's'}, 20, 1);
  CHECK(s.front_seq() == 9);  // 'q' was the ninth item pushed
  CHECK(drain_names(s, 21) == "qrs");
}

// The high-water mark counts a slot freed on the push's cycle (it is not reusable until the next),
// so it is the same whether the consumer popped before or after the producer pushed. An item taken
// ahead (pop_ahead, for the cycle after its push) holds its slot through that cycle, as it would
// have in the queue: a producer refused for it is woken for the cycle after.
TEST_CASE("a stream's high-water mark and an item taken ahead do not depend on which block ran first") {
  for (bool consumer_first : {true, false}) {
    Stream<Item> s("pair", 2);
    s.push({0, 'a'}, 10);
    if (consumer_first) s.pop(11);
    s.push({0, 'b'}, 11);
    if (!consumer_first) s.pop(11);
    CHECK(s.high_water() == 2);
  }
  Stream<Item> s("ahead", 2);
  std::vector<uint64_t> woken;
  s.on_space.add([&](uint64_t c) { woken.push_back(c); });
  s.push({0, 'x'}, 20);
  s.pop_ahead(21);  // as if popped on 21
  CHECK(s.empty());
  s.push({0, 'y'}, 20);
  CHECK_FALSE(s.can_push(20));  // 'x' still holds its slot on 20 ...
  CHECK_FALSE(s.can_push(21));  // ... and on 21, the cycle it counts as popped on
  CHECK(s.can_push(22));
  CHECK(woken == std::vector<uint64_t>{22, 22});  // each refusal woken for the first cycle it can push
  CHECK(s.high_water() == 2);
}

// Items taken ahead on consecutive cycles: the first holds its slot through the cycle it counts
// as popped on while the second already holds its own (a stream that kept only the last one's
// fill let a producer in, and set its high-water mark, one short).
TEST_CASE("two items taken ahead on consecutive cycles both hold their slots") {
  Stream<Item> s("ahead2", 2);
  std::vector<uint64_t> woken;
  s.on_space.add([&](uint64_t c) { woken.push_back(c); });
  s.push({0, 'x'}, 20);
  s.pop_ahead(21);  // counts as popped on 21
  s.push({0, 'y'}, 21);
  s.pop_ahead(22);  // counts as popped on 22
  woken.clear();
  CHECK_FALSE(s.can_push(21));  // both slots are in use on 21, as with 'x' popped on 21 and 'y' queued
  CHECK(woken == std::vector<uint64_t>{22});  // 'x' frees its slot from 22
  CHECK(s.can_push(22));
  s.push({0, 'z'}, 22);
  CHECK(s.high_water() == 2);
}

// The DMA engine takes a write ahead for the edge after the next, behind one for the next, while
// one taken before still counts as popped on this cycle: all three hold their slots on it (a
// stream that kept two let a fourth push in one early and marked its high water one short; a
// review found it).
TEST_CASE("three items taken ahead, one counted as popped on this cycle and two for the next edges, all hold their slots") {
  Stream<Item> s("ahead3", 4);
  s.push({0, 'w'}, 19);
  s.pop_ahead(20);  // counts as popped on 20
  s.push({0, 'x'}, 20);
  s.pop_ahead(21);
  s.push({0, 'y'}, 20);
  s.pop_ahead(22);  // behind x, for the edge after
  REQUIRE(s.can_push(20));
  s.push({0, 'z'}, 20);
  CHECK_FALSE(s.can_push(20));  // w (popped on 20), x, y and z use all four slots on 20
  CHECK(s.high_water() == 4);
  CHECK(s.can_push(21));  // w's slot is free from 21
}

// Two producers and one slot left: with a count shared by every producer, the first to ask on the
// cycle took it, so which one waited depended on which SystemC ran first. Each producer's pushes
// are admitted against its own items: both orders admit the same pushes, and a pop frees a slot
// only for the producer whose item it was.
TEST_CASE("a stream several producers feed admits each against its own items, whichever asks first") {
  for (bool first_a : {true, false}) {
    Stream<Item> s("shared", 2);
    const uint32_t a = s.add_producer(), b = s.add_producer();
    s.push({0, 'a'}, 10, 0, a);  // a holds one of its two slots
    std::string pushed;
    auto offer = [&](uint32_t p, char name) {
      if (s.can_push(11, p)) s.push({0, name}, 11, 0, p), pushed += name;
    };
    if (first_a) offer(a, 'A'), offer(b, 'B');
    else offer(b, 'B'), offer(a, 'A');
    std::sort(pushed.begin(), pushed.end());
    CHECK(pushed == "AB");  // the shared count had room for one: the first asked
    CHECK_FALSE(s.can_push(12, a));  // a's two slots are in use ...
    CHECK(s.can_push(12, b));        // ... b has one left
    CHECK(s.high_water() == 3);      // the stream's fill, every producer's items
    CHECK(s.pop(12).name == 'a');    // frees a slot of a's, from the next cycle
    CHECK_FALSE(s.can_push(12, a));
    CHECK(s.can_push(13, a));
  }
}

// A rank guard's question: a block due on this edge that has not acted may still push, even when a
// wake for a later cycle was asked of it meanwhile (an input arriving for the next cycle).
TEST_CASE("Wakeup: a block due on this edge may still act after a later wake is asked of it") {
  sys().run([] {
    wait_us(1);
    sys().wait_cycle(sys().cycle() + 1);
    Wakeup w(sys().hca.clock);  // no process waits on it: only its bookkeeping is asked
    const uint64_t c = sys().cycle();
    CHECK_FALSE(w.may_act_now());
    w.wake(c);  // due on this edge (a delta notification)
    CHECK(w.may_act_now());
    sc_core::wait(sc_core::SC_ZERO_TIME);  // that notification has fired: the activation is under way
    w.wake(c + 1);  // an input for the next cycle replaces the pending notification
    CHECK(w.may_act_now());  // answered false before: a guard would have let a lower rank pass it
    CHECK(w.begin_cycle());  // the block acts ...
    CHECK_FALSE(w.may_act_now());  // ... and can push nothing more on this cycle
  });
}

// The DMA engine puts a lone EQE or MSI-X write on the link at once only when the blocks that push
// the ranks before it say they push nothing more on its cycle; the check that they keep their word
// reports a write of an earlier rank pushed for that cycle afterwards (decisions.md 43).
TEST_CASE("rank guards: a lone MSI-X write goes ahead when no block of an earlier rank can still push, and one pushing after all is reported") {
  sys().run([] {
    DmaEngine& dma = sys().hca.dma;
    const uint64_t buf = booted_idle_device();
    // An idle device: neither the CQ writer nor the EQ engine is due on this cycle.
    REQUIRE_FALSE(sys().hca.cq.may_act_now());
    REQUIRE_FALSE(sys().hca.eq.may_act_now());
    const uint64_t ahead0 = dma.events_issued_ahead(), held0 = dma.events_held_by_guards();
    uint64_t c = sys().cycle();
    dma.s_write->push(write_to(buf, DmaSource::msix), c);
    CHECK(dma.events_issued_ahead() == ahead0 + 1);
    CHECK(dma.s_write->empty());  // on the link, for the next edge
    // The fault the check is for: an EQE pushed for the same cycle after all (as from an EQ engine
    // whose guard was wrong) would have gone first.
    CHECK(dma.ahead_order_breaks() == 0);
    dma.s_write->push(write_to(buf + 64, DmaSource::eqe), c);
    CHECK(dma.ahead_order_breaks() == 1);
    // A guard whose block may still push holds the next lone MSI-X write for its turn.
    sys().wait_cycle(sys().cycle() + 2);
    std::function<bool()> eq_guard = dma.set_rank_guard(DmaSource::eqe, [] { return false; });
    c = sys().cycle();
    dma.s_write->push(write_to(buf + 128, DmaSource::msix), c);
    CHECK(dma.events_issued_ahead() == ahead0 + 1);
    CHECK(dma.events_held_by_guards() == held0 + 1);
    CHECK(dma.s_write->size() == 1);
    dma.set_rank_guard(DmaSource::eqe, std::move(eq_guard));
    wait_us(1);
    CHECK(dma.writes_issued() == dma.writes_queued());
  });
}

// A receive's payload write goes ahead the same way, on the word of every rank before it: the MSI-X
// block, the firmware, and the transport's outboxes, which say so only once the receiver has handed
// on its packet for the cycle (decisions.md 47, 48), whatever its size. An RDMA WRITE's or READ
// response's data (rank `other`, the outboxes') also needs the outboxes' own word: the other outbox
// could still push one sorted before it.
TEST_CASE("rank guards: a payload write goes ahead only on the word of every earlier rank (and rank other's on its own too), and one pushing after all is reported") {
  sys().run([] {
    DmaEngine& dma = sys().hca.dma;
    const uint64_t buf = booted_idle_device();
    const uint64_t ahead0 = dma.payloads_issued_ahead(), breaks0 = dma.ahead_order_breaks();
    // An idle device but for the receiver: no block of ranks 1 to 4 or 6 can still push.
    REQUIRE_FALSE(sys().hca.cq.may_act_now());
    REQUIRE_FALSE(sys().hca.eq.may_act_now());
    REQUIRE_FALSE(sys().hca.msix.may_act_now());
    REQUIRE_FALSE(sys().hca.cmd.busy());
    // The receiver has handed on no packet on this cycle: it may still, so the outboxes' guard holds it.
    uint64_t c = sys().cycle();
    dma.s_write->push(write_to(buf, DmaSource::recv_data), c);
    CHECK(dma.payloads_issued_ahead() == ahead0);
    CHECK(dma.s_write->size() == 1);
    wait_us(1);
    // The outboxes say they are done (as after the receiver's packet): it goes ahead.
    std::function<bool()> outboxes = dma.set_rank_guard(DmaSource::other, [] { return true; });
    sys().wait_cycle(sys().cycle() + 1);
    c = sys().cycle();
    dma.s_write->push(write_to(buf + 64, DmaSource::recv_data), c);
    CHECK(dma.payloads_issued_ahead() == ahead0 + 1);
    CHECK(dma.s_write->empty());
    // A write of an earlier rank pushed for that cycle after all (a guard that was wrong) is reported.
    dma.s_write->push(write_to(buf + 128, DmaSource::other), c);
    CHECK(dma.ahead_order_breaks() == breaks0 + 1);
    wait_us(1);
    // The firmware serving a command (its guard says it may push): held again.
    std::function<bool()> firmware = dma.set_rank_guard(DmaSource::command, [] { return false; });
    sys().wait_cycle(sys().cycle() + 1);
    dma.s_write->push(write_to(buf + 192, DmaSource::recv_data), sys().cycle());
    CHECK(dma.payloads_issued_ahead() == ahead0 + 1);
    dma.set_rank_guard(DmaSource::command, std::move(firmware));
    wait_us(1);
    // Larger than 64 bytes: it goes ahead the same way.
    sys().wait_cycle(sys().cycle() + 1);
    DmaWrite big = write_to(buf + 256, DmaSource::recv_data);
    big.bulk.assign(512, 0xAB);
    dma.s_write->push(std::move(big), sys().cycle());
    CHECK(dma.payloads_issued_ahead() == ahead0 + 2);
    CHECK(dma.s_write->empty());
    wait_us(1);
    // Rank `other` on the outboxes' word: it goes ahead while they say done, and is held when the
    // earlier ranks say done but the outboxes do not. One of the responder's outbox (tiebreak 1)
    // gone ahead, a push of the requester's (tiebreak 0) for its cycle after all is reported.
    sys().wait_cycle(sys().cycle() + 1);
    c = sys().cycle();
    dma.s_write->push(write_to(buf + 1024, DmaSource::other), c, 1);
    CHECK(dma.payloads_issued_ahead() == ahead0 + 3);
    CHECK(dma.s_write->empty());
    const uint64_t breaks1 = dma.ahead_order_breaks();
    // The same producer: no break, and it goes ahead behind the first, for the turn after
    // (decisions.md 52).
    dma.s_write->push(write_to(buf + 1536, DmaSource::other), c, 1);
    CHECK(dma.ahead_order_breaks() == breaks1);
    CHECK(dma.payloads_issued_ahead() == ahead0 + 4);
    // The requester's, sorting before both: reported once.
    dma.s_write->push(write_to(buf + 1600, DmaSource::other), c, 0);
    CHECK(dma.ahead_order_breaks() == breaks1 + 1);
    wait_us(1);
    dma.set_rank_guard(DmaSource::other, [] { return false; });
    sys().wait_cycle(sys().cycle() + 1);
    dma.s_write->push(write_to(buf + 1088, DmaSource::other), sys().cycle());
    CHECK(dma.payloads_issued_ahead() == ahead0 + 4);
    CHECK(dma.s_write->size() == 1);
    dma.set_rank_guard(DmaSource::other, std::move(outboxes));
    wait_us(1);
    CHECK(dma.writes_issued() == dma.writes_queued());
  });
}

TEST_CASE("a DMA mark taken after a write names that write: a write ranked ahead of it on the same cycle does not release it early") {
  sys().run([] {
    boot();
    wait_us(2);
    DmaEngine& dma = sys().hca.dma;
    const uint64_t buf = sys().memory.allocate(4096);
    // A transport write first, then a firmware write on the same cycle: the firmware's leaves first
    // (sources the S29 checker does not account, since no CQ or receive WQE stands behind them).
    const uint64_t c = sys().cycle();
    dma.s_write->push(write_to(buf, DmaSource::other), c);
    const uint64_t mark = dma.writes_queued();
    dma.s_write->push(write_to(buf + 64, DmaSource::command), c);
    REQUIRE(dma.s_write->front().source == DmaSource::command);
    size_t left_in_queue = SIZE_MAX;
    uint64_t issued_at_mark = 0;
    dma.when_issued(mark, [&] {
      left_in_queue = dma.s_write->size();
      issued_at_mark = dma.writes_issued();
    });
    wait_us(1);
    // Released once both had left: counting positions would have released it after the firmware's
    // write alone, with the transport's write still queued.
    CHECK(left_in_queue == 0);
    CHECK(issued_at_mark == mark + 1);
    CHECK(dma.writes_issued() == dma.writes_queued());
  });
}

// A write pushed behind one the DMA engine issued ahead for the next edge (an MSI-X message behind
// its CQE, pushed on the same cycle) has its turn decided as surely, the edge after: it goes on the
// link at once for that edge too, instead of waking the channel for it. It enters the link, lands,
// and counts as issued (releasing a mark's waiter) exactly as when its turn issues it: shown
// against the same two writes with the MSI-X held for its turn by a rank guard. Entering one edge
// early, or counting as issued on the CQE's turn, fails the comparison.
TEST_CASE("a write pushed behind one issued ahead goes ahead for the edge after: it enters, lands and counts as issued as at its turn") {
  sys().run([] {
    DmaEngine& dma = sys().hca.dma;
    const uint64_t buf = booted_idle_device();
    struct Seen {
      sc_core::sc_time landed;
      std::vector<uint64_t> issued;  // writes_issued() past the mark before the CQE, on c .. c+3
      uint64_t released = 0;         // the cycle the MSI-X's mark released its waiter
    };
    auto run = [&](bool held, uint64_t to) {
      Seen seen;
      const size_t tap = sys().link.on_upstream_landed_at.add(
          [&](DmaSource, uint32_t, uint64_t addr, const sc_core::sc_time& at) {
            if (addr == to + 64) seen.landed = at;
          });
      std::function<bool()> eq_guard;
      if (held) eq_guard = dma.set_rank_guard(DmaSource::eqe, [] { return false; });
      const uint64_t ahead0 = dma.writes_issued_ahead(), q0 = dma.writes_queued();
      const uint64_t c = sys().cycle();
      REQUIRE(dma.writes_issued() == q0);
      dma.s_write->push(write_to(to, DmaSource::eqe), c);
      dma.s_write->push(write_to(to + 64, DmaSource::msix), c);
      dma.when_issued(dma.writes_queued(), [&] { seen.released = sys().cycle() - c; });
      CHECK(dma.writes_issued_ahead() - ahead0 == (held ? 1 : 2));
      CHECK(dma.s_write->size() == (held ? 1u : 0u));
      for (uint64_t k = 0; k < 4; ++k) {
        if (k > 0) sys().wait_cycle(c + k);
        seen.issued.push_back(dma.writes_issued() - q0);
      }
      if (held) dma.set_rank_guard(DmaSource::eqe, std::move(eq_guard));
      wait_us(2);
      uint8_t b = 0;
      sys().cpu.read(to + 64, &b, 1);  // quiet writes land when host memory is read, told their arrival
      sys().link.on_upstream_landed_at.remove(tap);
      seen.landed -= sys().hca.clock.at(c);
      return seen;
    };
    const Seen ahead = run(false, buf);
    sys().wait_cycle(sys().cycle() + 1);
    const Seen held = run(true, buf + 1024);
    CHECK(held.issued == std::vector<uint64_t>{0, 1, 2, 2});  // the CQE on c+1, the MSI-X on c+2
    CHECK(ahead.issued == held.issued);
    CHECK(held.released == 2);
    CHECK(ahead.released == held.released);
    CHECK(held.landed > sc_core::SC_ZERO_TIME);
    CHECK(ahead.landed == held.landed);
    CHECK(dma.ahead_order_breaks() == 0);
  });
}

// A producer pushing several items at once tells the consumer of the first only, where the consumer
// says it finds the rest when it acts for that one (the pipelined CQ writer, Stream::finds_batches);
// to any other consumer push_untold is a push like any other. The items are queued either way.
TEST_CASE("push_untold tells only a consumer that does not find batches") {
  Stream<Item> s("batch", 4);
  std::vector<uint64_t> told;
  s.on_data = [&](uint64_t c) { told.push_back(c); };
  s.push({0, 'a'}, 10);
  s.push_untold({0, 'b'}, 11);
  CHECK(told == std::vector<uint64_t>{11, 12});
  s.finds_batches = true;
  s.push_untold({0, 'c'}, 12);
  CHECK(told == std::vector<uint64_t>{11, 12});
  CHECK(s.pushed() == 3);
  CHECK(drain_names(s, 13) == "abc");
}

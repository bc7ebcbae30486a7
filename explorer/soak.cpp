#include "explorer/soak.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <systemc>

#include "model/regs/tables.h"
#include "sim/fabric.h"
#include "sim/system.h"

namespace vhca {

namespace {

namespace fb = fabric;
using sc_core::SC_US;
using sc_core::sc_time;

void wait_us(double us) { sc_core::wait(sc_time(us, SC_US)); }

class Soak {
 public:
  Soak(System& sys, const SoakOptions& o, SoakReport& r) : sys_(sys), o_(o), r_(r), rng_(o.seed) {}

  void run() {
    for (uint32_t h = 0; h < 2; ++h)
      if (!sys_.node(h).driver.boot().ok()) return fail("boot failed");
    connect();
    spare_ = fb::create_cq(dev0(), 64);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::pair<const char*, std::function<void()>>> kinds = {
        {"traffic", [this] { traffic(0); }},
        // 2-5 %: eight losses of one packet in a row (retry exceeded) stay below 1e-10 a packet.
        {"traffic under loss", [this] { traffic(0.02 + 0.03 * unit()); }},
        {"corrupted packets", [this] { corrupted(); }},
        {"link down and up", [this] { link_outage(); }},
        {"resize racing completions", [this] { resize_racing(); }},
        {"arms racing events", [this] { arms_racing(); }},
        {"vector masked", [this] { vector_masked(); }},
        {"commands with bad fields", [this] { bad_commands(); }},
        {"CQ buffer vanished", [this] { buffer_vanished(); }},
        {"doorbells racing destroy", [this] { doorbells_racing_destroy(); }},
    };
    if (!o_.packet_faults)
      kinds.erase(std::remove_if(kinds.begin(), kinds.end(), [](const auto& k) {
                    const std::string n = k.first;
                    return n == "traffic under loss" || n == "corrupted packets" || n == "link down and up";
                  }), kinds.end());
    for (;;) {
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (o_.episodes ? r_.episodes >= o_.episodes : wall >= o_.minutes * 60) break;
      const auto& [name, episode] = kinds[pick(kinds.size())];
      ++r_.episodes;
      ++r_.by_kind[name];
      kind_ = name;
      episode();
    }
  }

 private:
  Driver& dev0() { return sys_.node(0).driver; }
  uint64_t pick(uint64_t n) { return rng_() % n; }
  double unit() { return double(rng_() >> 11) * (1.0 / 9007199254740992.0); }
  void fail(const std::string& what) {
    r_.violations.push_back(fmt::format("cycle {}: episode {} ({}): {}", sys_.node(0).hca.clock.now(), r_.episodes, kind_, what));
  }

  void connect() {
    for (uint32_t h = 0; h < 2; ++h) end_[h] = fb::make_endpoint(sys_.node(h).driver, 1 << 20);
    fb::RcParams p;
    p.timeout = 8;  // 4.096 us x 2^8 = 1 ms: a lost packet costs a millisecond, not 67
    fb::connect_rc(*end_[0].qp, *end_[1].qp, p);
  }

  // Polls `cq` for `n` completions within `limit_us`.
  std::vector<Wc> poll(Cq& cq, size_t n, double limit_us) {
    std::vector<Wc> got;
    const sc_time end = sc_core::sc_time_stamp() + sc_time(limit_us, SC_US);
    Wc wc[16];
    while (got.size() < n && sc_core::sc_time_stamp() < end) {
      const int k = verbs::poll_cq(cq, 16, wc);
      if (k > 0) got.insert(got.end(), wc, wc + k);
      else wait_us(0.5);
    }
    return got;
  }

  // 1 to 16 WRs, SEND, WRITE or READ, 1 B to 64 KiB, under `loss`: each completes once, in order,
  // with success, and the bytes arrive.
  void traffic(double loss) {
    if (loss > 0) {
      sys_.ib.set_loss(loss, rng_());
      ++r_.faults["loss episodes"];
    }
    fb::Endpoint& a = end_[0];
    fb::Endpoint& b = end_[1];
    const int n = 1 + int(pick(16));
    std::vector<SendWr> wrs;
    std::vector<RecvWr> recvs;
    struct Check {
      Driver* host;  // where the bytes must arrive
      uint64_t dst;
      std::vector<uint8_t> bytes;
    };
    std::vector<Check> checks;
    for (int i = 0; i < n; ++i) {
      const uint32_t size = 1 + uint32_t(pick(65536));
      const uint64_t slot = uint64_t(i) * 65536;
      std::vector<uint8_t> data(size);
      for (uint8_t& x : data) x = uint8_t(rng_());
      const int kind = int(pick(3));
      SendWr w;
      w.wr_id = ++wr_id_;
      w.flags = kSendSignaled;
      if (kind == 2) {  // READ: b's bytes into a
        b.dev->memory().write(b.buf.addr + slot, data.data(), size);
        w.opcode = sqwqe::kRdmaRead;
        w.sg_list = {a.buf.sge(slot, size)};
        w.remote_addr = b.buf.addr + slot;
        w.rkey = b.buf.mr->rkey;
        checks.push_back({a.dev, a.buf.addr + slot, data});
      } else {
        a.dev->memory().write(a.buf.addr + slot, data.data(), size);
        w.sg_list = {a.buf.sge(slot, size)};
        if (kind == 1) {
          w.opcode = sqwqe::kRdmaWrite;
          w.remote_addr = b.buf.addr + slot;
          w.rkey = b.buf.mr->rkey;
        } else {
          w.opcode = sqwqe::kSend;
          recvs.push_back(RecvWr{w.wr_id, {b.buf.sge(slot, size)}});
        }
        checks.push_back({b.dev, b.buf.addr + slot, data});
      }
      wrs.push_back(w);
    }
    if (!recvs.empty() && verbs::post_recv(*b.qp, recvs) != 0) return fail("post_recv: " + b.dev->last_error());
    if (verbs::post_send(*a.qp, wrs) != 0) return fail("post_send: " + a.dev->last_error());
    r_.operations += wrs.size() + recvs.size();
    const std::vector<Wc> sent = poll(*a.scq, wrs.size(), 200000);
    const std::vector<Wc> received = poll(*b.rcq, recvs.size(), 200000);
    sys_.ib.set_loss(0, 0);
    // A failed episode leaves its QPs in error or with work outstanding: the next traffic runs on a
    // fresh connection, so that one finding does not turn every later episode into another.
    auto broken = [&](const std::string& what) {
      fail(what);
      ++r_.faults["connections replaced after a failure"];
      connect();
    };
    for (size_t i = 0; i < sent.size(); ++i)
      if (sent[i].status != 0 || sent[i].wr_id != wrs[i].wr_id)
        return broken(fmt::format("traffic: send completion {} is wr_id {:#x} status {:#x}, expected wr_id {:#x} "
                                  "success", i, sent[i].wr_id, sent[i].status, wrs[i].wr_id));
    if (sent.size() != wrs.size() || received.size() != recvs.size())
      return broken(fmt::format("traffic: {} of {} send and {} of {} receive completions", sent.size(), wrs.size(),
                                received.size(), recvs.size()));
    for (const Check& c : checks) {
      std::vector<uint8_t> got(c.bytes.size());
      if (!c.host->memory().read(c.dst, got.data(), got.size()) || got != c.bytes)
        return broken("traffic: the bytes at the destination differ");
    }
  }

  // A few packets fail the receiver's ICRC check (both directions): RC retransmits.
  void corrupted() {
    std::vector<LinkFault> f;
    // At most three a side, so that no PSN can fail retry_cnt (7) + 1 times in a row: a retry
    // exceeded would then be a bug, not the burst's right outcome.
    for (uint32_t side : {0u, 1u}) {
      int n = 0;
      for (uint64_t p = 1 + pick(3); p < 12 && n < 3; p += 1 + pick(4), ++n) {
        f.push_back(LinkFault{LinkFault::Kind::corrupt, side, p});
        ++r_.faults["corrupted packets"];
      }
    }
    sys_.ib.set_faults(0, f);
    traffic(0);
    sys_.ib.set_faults(0, {});
  }

  // The cable goes down for 1 to 500 us while WRs are in flight.
  void link_outage() {
    sys_.ib.set_up(false);
    ++r_.faults["link outages"];
    const double down = 1 + unit() * 499;
    sc_core::sc_spawn([this, down] {
      wait_us(down);
      sys_.ib.set_up(true);
    });
    traffic(0);
  }

  CompletionRecord record(Cq& cq) {
    CompletionRecord r;
    r.cqn = cq.cqn;
    r.opcode = cqe::kRespSend;
    r.wr_id = ++wr_id_;
    r.byte_cnt = 64;
    return r;
  }

  // Injects `n` completions into `cq`, `gap` cycles apart, from the next cycle; their wr_ids.
  std::vector<uint64_t> inject(Cq& cq, int n, uint64_t gap) {
    std::vector<uint64_t> ids;
    const uint64_t at = sys_.node(0).hca.clock.now() + 2;
    for (int i = 0; i < n; ++i) {
      const CompletionRecord r = record(cq);
      ids.push_back(r.wr_id);
      sys_.node(0).hca.inject(r, at + uint64_t(i) * gap);
    }
    r_.operations += ids.size();
    return ids;
  }

  void expect_polled(Cq& cq, const std::vector<uint64_t>& ids, const char* what, std::vector<Wc> got = {}) {
    const std::vector<Wc> more = poll(cq, ids.size() - got.size(), 5000);
    got.insert(got.end(), more.begin(), more.end());
    if (got.size() != ids.size()) return fail(fmt::format("{}: {} of {} completions", what, got.size(), ids.size()));
    for (size_t i = 0; i < ids.size(); ++i)
      if (got[i].wr_id != ids[i]) return fail(fmt::format("{}: completion {} out of order", what, i));
  }

  // Completions keep arriving while the CQ is resized up and back down.
  void resize_racing() {
    // No more than the CQ holds now: an overflow is S14's refusal, not this episode's subject.
    const int n = std::min(40 + int(pick(40)), int(spare_->cqe) - 8);
    const std::vector<uint64_t> ids = inject(*spare_, n, 20 + pick(200));
    std::vector<Wc> got;
    for (int step = 0; step < 4; ++step) {
      const std::vector<Wc> some = poll(*spare_, 8, 2);
      got.insert(got.end(), some.begin(), some.end());
      const int want = step % 2 ? 80 : 128 + int(pick(256));  // never below what was injected
      if (verbs::resize_cq(*spare_, want) < 0 && dev0().last_error().find("outstanding") == std::string::npos)
        return fail("resize: " + dev0().last_error());
      ++r_.operations;
    }
    expect_polled(*spare_, ids, "resize racing completions", got);
  }

  // The CQ is armed again and again while completions arrive: every one is polled once, and an
  // event came.
  void arms_racing() {
    wait_us(10);
    uint64_t events = 0;
    verbs::set_comp_handler(*spare_, [&events](Cq&) { ++events; });
    const std::vector<uint64_t> ids = inject(*spare_, 10 + int(pick(30)), 1 + pick(50));
    std::vector<Wc> got;
    for (int i = 0; i < 20 && got.size() < ids.size(); ++i) {
      verbs::req_notify_cq(*spare_, kNotifyNext);
      ++r_.operations;
      wait_us(unit() * 3);
      const std::vector<Wc> some = poll(*spare_, ids.size() - got.size(), 1);
      got.insert(got.end(), some.begin(), some.end());
    }
    expect_polled(*spare_, ids, "arms racing events", got);
    wait_us(10);  // the interrupt and its handler (hard IRQ, EQ poll) take microseconds
    verbs::set_comp_handler(*spare_, nullptr);
    if (events == 0) fail("arms racing events: no event");
  }

  // The spare CQ's vector is masked: its event waits (the pending bit) until the unmask.
  void vector_masked() {
    wait_us(10);  // an event of an earlier episode still on its way is handled before this one
    const uint32_t vector = dev0().host_vector_of(spare_->comp_vector);
    uint64_t events = 0;
    verbs::set_comp_handler(*spare_, [&events](Cq&) { ++events; });
    HostCpu& cpu = sys_.node(0).cpu;
    cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 1);
    // Read back: a read completes after the posted write ahead of it, so the mask is in place
    // before the first completion (injected straight into the device) can raise an event.
    if ((dev0().read_register(reg::msix_ctrl, vector) & 1) == 0) return fail("vector masked: the mask did not stick");
    ++r_.faults["vectors masked"];
    verbs::req_notify_cq(*spare_, kNotifyNext);
    const std::vector<uint64_t> ids = inject(*spare_, 1 + int(pick(4)), 5);
    wait_us(10 + unit() * 200);
    const uint64_t masked = events;
    cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 0);
    wait_us(10);
    expect_polled(*spare_, ids, "vector masked");
    verbs::set_comp_handler(*spare_, nullptr);
    if (masked != 0) fail("vector masked: an event while the vector was masked");
    if (events == 0) fail("vector masked: no event after the unmask");
  }

  // Commands whose fields name nothing or are out of range: each refused, the device still answers.
  void bad_commands() {
    const std::vector<std::pair<uint16_t, Driver::Input>> bad = {
        {cmd::kDestroyCq, {0xFFFFFF}},       {cmd::kQueryCq, {0xFFFF00}},        {cmd::kModifyCq, {0xFFFFFF, 1}},
        {cmd::kCreateCq, {30, 0, 0x1000}},   {cmd::kDestroyQp, {0xFFFFFF}},      {cmd::kDeregMr, {0xFFFFFF}},
        {0x999, {}},                         {cmd::kCreateEq, {0, 0, 0x1000, 1, 1}}};
    for (int i = 0; i < 3; ++i) {
      const auto& [op, in] = bad[pick(bad.size())];
      const CommandResult r = dev0().exec(op, in);
      ++r_.operations;
      ++r_.faults["commands with bad fields"];
      if (r.timed_out || r.ok()) return fail(fmt::format("bad command {:#x}: {}", op, r.timed_out ? "timed out" : "accepted"));
    }
    if (!dev0().exec(cmd::kQueryCap).ok()) fail("QUERY_CAP failed after bad commands");
  }

  // A CQ whose buffer the host took away: its next CQE write fails, the CQ goes to error, and the
  // spare CQ goes on.
  void buffer_vanished() {
    Cq* cq = fb::create_cq(dev0(), 8);
    dev0().memory().unmap(cq->buf, uint64_t(cqe::kSize) << cq->log_size);
    ++r_.faults["DMA errors"];
    inject(*cq, 1, 1);
    wait_us(20);
    if (sys_.node(0).hca.cq.context(cq->cqn).state != CqState::error) fail("buffer vanished: the CQ is not in error");
    // The ring is gone already: destroy the context, release the rest (the doorbell record).
    const CommandResult r = dev0().exec(cmd::kDestroyCq, {cq->cqn});
    if (!r.ok()) fail("buffer vanished: destroy: " + r.message());
    verbs::abandon_cq(cq);
    expect_polled(*spare_, inject(*spare_, 2, 3), "after a CQ error");
  }

  // Arm doorbells for a CQ around its destruction: the late ones are counted and ignored.
  void doorbells_racing_destroy() {
    Cq* cq = fb::create_cq(dev0(), 8);
    const uint32_t cqn = cq->cqn;
    const uint32_t before = dev0().read_register(reg::bad_doorbells);
    verbs::req_notify_cq(*cq, kNotifyNext);
    if (verbs::destroy_cq(cq) != 0) return fail("doorbells racing destroy: " + dev0().last_error());
    const int late = 1 + int(pick(3));
    for (int i = 0; i < late; ++i)
      sys_.node(0).cpu.mmio_write64(Driver::offset_of(reg::cq_arm_db, dev0().config().uar), uint64_t(cqn));
    r_.operations += uint64_t(late) + 1;
    r_.faults["doorbells for a destroyed CQ"] += uint64_t(late);
    wait_us(5);
    if (dev0().read_register(reg::bad_doorbells) < before + uint32_t(late))
      fail("doorbells racing destroy: late doorbells not counted");
  }

  System& sys_;
  const SoakOptions& o_;
  SoakReport& r_;
  std::mt19937_64 rng_;
  fb::Endpoint end_[2];
  Cq* spare_ = nullptr;
  uint64_t wr_id_ = 0;
  const char* kind_ = "";
};

}  // namespace

std::string SoakReport::text() const {
  std::string s = fmt::format("vhca-sim soak: {} episodes, {} operations, {:.3f} ms simulated in {:.1f} s\n", episodes,
                              operations, simulated_ms, wall_s);
  for (const auto& [k, n] : by_kind) s += fmt::format("  episodes {:<30} {}\n", k, n);
  for (const auto& [k, n] : faults) s += fmt::format("  faults injected: {:<30} {}\n", k, n);
  s += fmt::format("  S29 invariants: {} observations checked, {} broken or wrong outcomes\n", invariants_checked,
                   violations.size());
  for (size_t i = 0; i < violations.size() && i < 20; ++i) s += "  broken: " + violations[i] + "\n";
  return s;
}

SoakReport run_soak(const SoakOptions& o) {
  SoakReport r;
  SystemConfig cfg;
  cfg.hosts = 2;
  cfg.check_invariants = true;
  System sys(cfg);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    sys.run([&] { Soak(sys, o, r).run(); }, sc_time(1e9, SC_US));
  } catch (const std::exception& e) {
    r.violations.push_back(std::string("the soak did not finish: ") + e.what());
  }
  if (InvariantChecker* inv = sys.invariants()) {
    inv->check_queues(sys);
    r.invariants_checked = inv->checked();
    r.violations.insert(r.violations.end(), inv->violations().begin(), inv->violations().end());
  }
  r.simulated_ms = sc_core::sc_time_stamp().to_seconds() * 1e3;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace vhca

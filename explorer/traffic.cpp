#include "explorer/traffic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "model/common/bytes.h"
#include "sim/fabric.h"
#include "cosim/rtl_engine.h"
#include "cosim/rtl_pipelined_writer.h"
#include "model/cq/cq_writer_pipeline.h"
#include "sim/system.h"
#include "explorer/arrival_trace.h"
#include "explorer/meter.h"
#include "explorer/probes.h"
#include "explorer/workload.h"

namespace vhca {

const char* arrival_name(Arrival a) {
  switch (a) {
    case Arrival::poisson: return "poisson";
    case Arrival::constant: return "constant";
    case Arrival::onoff: return "onoff";
    case Arrival::pingpong: return "pingpong";
    case Arrival::trace: return "trace";
  }
  return "?";
}

uint32_t Workload::max_size() const {
  uint32_t m = 1;
  if (arrival != Arrival::trace)
    for (uint32_t s : sizes) m = std::max(m, s);
  for (const TracedArrival& a : trace) m = std::max(m, a.size);
  return m;
}

std::vector<QpGroup> TrafficOptions::effective_groups() const {
  if (!groups.empty()) return groups;
  QpGroup all;
  all.name = "all";
  all.qps = qps;
  all.workload = workload;
  return {all};
}

namespace {
// The override of CQ `cq` on `host` that sets what `sets` asks for: one for this host beats one
// for both; nullptr if none.
template <typename Sets>
const CqOverride* override_of(const std::vector<CqOverride>& all, int host, int cq, Sets sets) {
  const CqOverride* found = nullptr;
  for (const CqOverride& c : all)
    if (c.cq == cq && sets(c) && (c.host == host || (c.host == -1 && !found))) found = &c;
  return found;
}
}  // namespace

ModerationChoice TrafficOptions::moderation_of(int host, int cq) const {
  const CqOverride* c = override_of(cq_overrides, host, cq, [](const CqOverride& x) { return x.has_moderation; });
  return c ? c->moderation : moderation;
}

int TrafficOptions::vector_of(int host, int cq) const {
  const CqOverride* c = override_of(cq_overrides, host, cq, [](const CqOverride& x) { return x.vector >= 0; });
  return c ? c->vector : cq % vectors;
}

uint32_t TrafficOptions::max_size() const {
  uint32_t m = 1;
  for (const QpGroup& g : effective_groups()) m = std::max(m, g.workload.max_size());
  return m;
}

namespace {

namespace fb = fabric;
using sc_core::sc_time;

// The bytes of message `seq` on QP `qp`: every message differs, so a misplaced one shows. Eight
// bytes per xorshift step (in host order: generation and check agree), so that the check costs
// little beside the model.
void pattern(std::vector<uint8_t>& out, int qp, uint64_t seq) {
  uint64_t x = (uint64_t(qp) << 40) ^ (seq * 0x9E3779B97F4A7C15ull) ^ 0x5DEECE66Dull;
  const size_t n = out.size();
  uint8_t* p = out.data();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {  // whole words: a fixed-size copy the compiler turns into a store
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  if (i < n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(p + i, &x, n - i);
  }
}
constexpr uint64_t kReadTag = uint64_t(1) << 32;  // READ sources use their own patterns
constexpr uint8_t kInjected = 0xFF;  // a Message that is an injected completion, not a WQE
constexpr uint32_t kInjectedQpnBase = 0x800000;  // the QPN injected records carry: stream q is base + q

class TrafficRun {
 public:
  explicit TrafficRun(const TrafficOptions& o)
      : o_(o),
        groups_(o.effective_groups()),
        max_size_(o.max_size()),
        sys_(system_config(o)),
        h_{&sys_.node(0), &sys_.node(1)},
        probes_(o) {
    for (size_t g = 0; g < groups_.size(); ++g)
      for (int j = 0; j < groups_[g].qps; ++j) {
        const int q = int(group_of_.size());
        group_of_.push_back(int(g));
        const auto& cqs = groups_[g].cqs;
        cq_of_.push_back(cqs.empty() ? q % o.cqs : cqs[size_t(j) % cqs.size()]);
      }
  }

  TrafficResult run() {
    bool setup_ok = true;
    double wall_s = 0;
    // Simulated time allowed: the workload, its longest drain, and a second for boot and set-up.
    const sc_time limit = sc_time(o_.duration_us, sc_core::SC_US) + drain_cap() + sc_time(1, sc_core::SC_SEC);
    try {
      sys_.run(
          [&] {
            try {
              setup();
              const auto wall0 = std::chrono::steady_clock::now();
              start_ = sc_core::sc_time_stamp();
              measure_from_ = start_ + sc_time(o_.warmup_us, sc_core::SC_US);
              end_ = start_ + sc_time(o_.duration_us, sc_core::SC_US);
              sc_core::sc_spawn([this] { measure(); }, "measure");
              // A hundred intervals over the workload, none shorter than 10 us.
              probes_.start_series(start_, end_, std::max(sc_time(10, sc_core::SC_US), (end_ - start_) / 100.0));
              int first = 0;
              for (size_t g = 0; g < groups_.size(); ++g) {
                sc_core::sc_spawn(
                    [this, g, first] {
                      run_arrivals(groups_[g], int(g), first, o_.seed, start_, end_,
                                   [this](int q, uint8_t op, uint32_t size) { arrive(q, op, size); });
                    },
                    ("arrivals_" + std::to_string(g)).c_str());
                first += groups_[g].qps;
              }
              sc_core::wait(end_ - sc_core::sc_time_stamp());
              drain();
              stop_ = sc_core::sc_time_stamp();
              for (int h = 0; h < 2; ++h) last_[h] = take_snapshot(*h_[h], cqs_[h]);
              wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
            } catch (const sc_core::sc_unwind_exception&) {
              throw;  // killed once the run is over (end_threads): let SystemC unwind it
            } catch (const std::exception& e) {
              std::fprintf(stderr, "vhca-sim: %s\n", e.what());
              setup_ok = false;
            }
          },
          limit);
    } catch (const std::runtime_error& e) {  // the run did not end (time limit, livelock, wall clock)
      std::fprintf(stderr, "vhca-sim: the run did not finish: %s\n", e.what());
      setup_ok = false;
    }
    TrafficResult r = result();
    r.ok = r.ok && setup_ok;
    r.wall_s = wall_s;
    if (o_.queues) {
      r.queues = queue_links();
      r.injections_early = sys_.node(0).hca.arbiter.passed_on_early();
      r.injections_taken_back = sys_.node(0).hca.arbiter.taken_back();
      r.records_at_once = sys_.node(0).hca.arbiter.passed_at_once();
      r.injections_at_once = sys_.node(0).hca.arbiter.injections_at_once();
      r.records_taken_back = sys_.node(0).hca.arbiter.taken_back_at_once();
      r.writes_issued_ahead = sys_.node(0).hca.dma.writes_issued_ahead();
      r.events_issued_ahead = sys_.node(0).hca.dma.events_issued_ahead();
      r.payloads_issued_ahead = sys_.node(0).hca.dma.payloads_issued_ahead();
      r.events_held = sys_.node(0).hca.dma.events_held_by_guards();
      r.ahead_order_breaks = sys_.node(0).hca.dma.ahead_order_breaks();
      r.completions_early = sys_.node(0).link.completions_told_early();
      r.completions_moved = sys_.node(0).link.early_completions_moved();
      r.link_passes = sys_.node(0).link.placed_before_others();
      r.turns_slept_for_credits = sys_.node(0).hca.dma.turns_slept_for_credits();
      r.credit_stalls = sys_.node(0).hca.dma.credit_stalls();
      const TransportStats& ts = sys_.node(0).hca.transport.stats();
      r.timers_fired_first = ts.timers_fired_first;
      r.reads_answered_first = ts.reads_answered_first;
      r.packets_handed_first = ts.packets_handed_first;
      r.arrivals_taken = ts.arrivals_taken;
      r.arrivals_sent_busy = ts.arrivals_sent_busy;
      r.arrival_wakes = ts.arrival_wakes;
      r.host_cores = sys_.node(0).cpu.core_counters();
    }
    if (InvariantChecker* inv = sys_.invariants()) {
      inv->check_queues(sys_);
      r.invariants_checked = inv->checked();
      r.invariant_violations = inv->violations();
      if (!r.invariant_violations.empty()) r.ok = false;
    }
    if (!probes_.write_outputs()) r.ok = false;
    if (!o_.record_path.empty()) {
      FILE* f = std::fopen(o_.record_path.c_str(), "w");
      const bool put = f && std::fputs(arrival_trace_text(record_).c_str(), f) >= 0;
      if (!(f && std::fclose(f) == 0 && put)) {
        std::fprintf(stderr, "vhca-sim: cannot write %s\n", o_.record_path.c_str());
        r.ok = false;
      }
    }
    return r;
  }

 private:
  struct Message {
    int qp = 0;
    uint64_t seq = 0;  // per QP
    uint8_t opcode = 0;
    uint32_t size = 0;
    sc_time posted;
    CqeDone done;
    sc_time pong_posted;  // a pong: when host 1 posted it (`posted` is its ping's)
  };

  static SystemConfig system_config(const TrafficOptions& o) {
    SystemConfig cfg;
    cfg.hosts = 2;
    cfg.driver.num_comp_vectors = uint32_t(o.vectors);
    cfg.driver.blueflame = o.blueflame;
    cfg.cpu = o.cpu;
    cfg.cpu.cores = uint32_t(o.host_cores());
    cfg.hca.cmd.latency = o.command_latency;
    cfg.ib = o.link;
    cfg.link = o.pcie;
    cfg.hca.clock_mhz = o.hca_clock_mhz;
    cfg.hca.transport = o.transport;  // the LID is the node's (System assigns it)
    cfg.hca.cq.arm_event = o.arm_event;
    cfg.hca.arbiter.pass_on_early = o.early_injection;
    cfg.hca.dma.writes_ahead = o.writes_ahead;
    cfg.hca.dma.early_completions = o.early_completions;
    cfg.hca.dma.wait_for_credits = o.wait_for_credits;
    cfg.ib.seed = o.seed;
    cfg.wall_limit_s = o.wall_limit_s;
    cfg.check_invariants = o.check;
    if (o.fault_flip_payload) cfg.ib.faults.push_back(LinkFault{LinkFault::Kind::flip_payload, 0, 100});
    if (o.rtl)  // the default 65,536 CQ contexts: the RTL's full size
      cfg.hca.cq_engine = [](const CqeWriterConfig& c) { return make_rtl_pipelined_writer(c); };
    return cfg;
  }

  const Workload& workload_of(int q) const { return groups_[size_t(group_of_[size_t(q)])].workload; }
  bool pingpong(int q) const { return workload_of(q).arrival == Arrival::pingpong; }
  // Message `seq` of QP q's buffer slot, counted over all QPs (the per-slot flags), and its
  // offset in each buffer.
  size_t slot_index(int q, uint64_t seq) const { return size_t(q) * size_t(o_.depth) + size_t(seq % uint64_t(o_.depth)); }
  uint64_t slot_offset(int q, uint64_t seq) const { return uint64_t(slot_index(q, seq)) * max_size_; }
  // The pattern a READ source slot holds (constant per slot: READs only read it).
  uint64_t read_source_pattern(uint64_t seq) const { return kReadTag + seq % uint64_t(o_.depth); }
  bool measuring(const sc_time& posted) const { return posted >= measure_from_; }

  void setup() {
    for (Node* h : h_) {
      CommandResult r = h->driver.boot();
      if (!r.ok()) throw std::runtime_error("boot failed: " + r.message());
    }
    for (int h = 0; h < 2; ++h) {
      pool_[h] = std::make_unique<CqPool>(h_[h]->driver);
      for (int i = 0; i < o_.cqs; ++i) {
        const ModerationChoice m = o_.moderation_of(h, i);
        IbCq* cq = pool_[h]->alloc_cq(o_.cq_size, uint32_t(o_.vector_of(h, i)), o_.context, m.mod, m.adaptive);
        if (!cq) throw std::runtime_error("alloc_cq: " + h_[h]->driver.last_error());
        cqs_[h].push_back(cq);
      }
      pd_[h] = fb::alloc_pd(h_[h]->driver);
      probes_.attach(h, *h_[h], *pool_[h], cqs_[h]);
    }
    const uint64_t bytes = uint64_t(qps()) * uint64_t(o_.depth) * max_size_;
    src_ = fb::reg_buffer(*pd_[0], bytes);
    read_dst_ = fb::reg_buffer(*pd_[0], bytes);
    pong_dst_ = fb::reg_buffer(*pd_[0], bytes);
    recv_buf_ = fb::reg_buffer(*pd_[1], bytes);
    write_buf_ = fb::reg_buffer(*pd_[1], bytes);
    read_src_ = fb::reg_buffer(*pd_[1], bytes);
    const fb::RcParams rc = rc_params();
    for (int q = 0; q < qps(); ++q) {
      if (workload_of(q).inject_cqes) {  // its arrivals are completions: no QP carries them
        qp_[0].push_back(nullptr);
        qp_[1].push_back(nullptr);
        continue;
      }
      Cq* c0 = cqs_[0][size_t(cq_of_[size_t(q)])]->cq;
      Cq* c1 = cqs_[1][size_t(cq_of_[size_t(q)])]->cq;
      qp_[0].push_back(fb::create_qp(*pd_[0], c0, c0, QpType::rc, uint32_t(o_.depth)));
      qp_[1].push_back(fb::create_qp(*pd_[1], c1, c1, QpType::rc, uint32_t(o_.depth)));
      fb::connect_rc(*qp_[0].back(), *qp_[1].back(), rc);
    }
    read_src_written_.assign(size_t(qps()) * size_t(o_.depth), false);
    next_seq_.assign(size_t(qps()), 0);
    next_done_.assign(size_t(qps()), 0);
    slot_in_check_.assign(size_t(qps()) * size_t(o_.depth), false);
    in_flight_[0].resize(size_t(qps()));
    in_flight_[1].resize(size_t(qps()));
    for (int h = 0; h < 2; ++h) {
      recv_done_[h] = std::vector<CqeDone>(size_t(qps()) * size_t(o_.depth));
      recv_posted_[h].assign(size_t(qps()), 0);
      for (int q = 0; q < qps(); ++q) {
        for (int j = 0; j < o_.depth; ++j) {
          CqeDone& d = recv_done_[h][size_t(q) * size_t(o_.depth) + size_t(j)];
          pool_[h]->track(d);
          d.done = [this, h, q, j](IbCq& cq, const Wc& wc) { on_receive(h, q, uint64_t(j), cq, wc); };
        }
        if ((h == 1 || pingpong(q)) && qp_[h][size_t(q)])
          for (int j = 0; j < o_.depth; ++j) post_receive(h, q);
      }
    }
  }
  int qps() const { return int(group_of_.size()); }

  void post_receive(int h, int q) {
    const uint64_t k = recv_posted_[h][size_t(q)]++;
    const uint64_t slot = uint64_t(q) * uint64_t(o_.depth) + k % uint64_t(o_.depth);
    const fb::Buffer& buf = h == 1 ? recv_buf_ : pong_dst_;
    fb::post_recv(*qp_[h][size_t(q)], RecvWr{CqPool::wr_id_of(recv_done_[h][slot]), {buf.sge(slot * max_size_, max_size_)}});
  }

  // A completion of opcode `op` on QP q's CQ of host h, posted at `posted`.
  void sample_latency(int h, int q, const char* op, const sc_time& posted, const sc_time& visible) {
    if (!measuring(posted)) return;
    probes_.sample_latency(h, cq_of_[size_t(q)], o_.groups.empty() ? std::string() : groups_[size_t(group_of_[size_t(q)])].name,
                           op, posted, visible);
  }

  void check_data(int h, uint64_t addr, int q, uint64_t seq, uint32_t size) {
    if (!data_matches(h, addr, q, seq, size)) ++r_.data_errors;
  }
  bool data_matches(int h, uint64_t addr, int q, uint64_t seq, uint32_t size) {
    expect_.resize(size);
    got_.resize(size);
    pattern(expect_, q, seq);
    h_[h]->driver.memory().read(addr, got_.data(), size);
    return got_ == expect_;
  }

  // A WRITE's data at host 1, once it can be seen there: its ACK left host 1's HCA after the
  // payload writes were issued to its PCIe link, but they may still be on that link (a loaded
  // link) when host 0 learns of the completion. Data not there yet is checked again when every
  // posted write now on the link has landed; the message's buffer slot stays its own until then.
  void check_write(int q, uint64_t seq, uint32_t size, uint64_t off) {
    const sc_time landed = h_[1]->link.posted_landed_by(true);
    if (data_matches(1, write_buf_.addr + off, q, seq, size)) return;
    if (landed <= sc_core::sc_time_stamp()) {
      ++r_.data_errors;
      return;
    }
    ++deferred_checks_;
    slot_in_check_[slot_index(q, seq)] = true;
    sc_core::sc_spawn([this, q, seq, size, off, landed] {
      sc_core::wait(landed - sc_core::sc_time_stamp());
      sc_core::wait(sc_core::SC_ZERO_TIME);  // after the link's delivery at that instant, whichever runs first
      check_data(1, write_buf_.addr + off, q, seq, size);
      slot_in_check_[slot_index(q, seq)] = false;
      --deferred_checks_;
    });
  }

  // A receive completed on host h: on host 1 the data of the oldest SEND in flight on that QP
  // (answered by a pong in ping-pong); on host 0 a pong, which ends a round trip.
  void on_receive(int h, int q, uint64_t slot, IbCq& cq, const Wc& wc) {
    ++r_.recvs;
    const sc_time visible = probes_.claim_cqe(h, cq.cq->cqn);
    probes_.sample_occupancy(h, cq);
    auto& flight = in_flight_[h][size_t(q)];
    if (wc.status != 0 || flight.empty()) {
      ++r_.errors;
      return;
    }
    Message* m = flight.front();
    flight.pop_front();
    const uint64_t addr = (h == 1 ? recv_buf_.addr : pong_dst_.addr) + (uint64_t(q) * uint64_t(o_.depth) + slot) * max_size_;
    check_data(h, addr, q, m->seq, m->size);
    sample_latency(h, q, h == 1 ? "RECV" : "PINGPONG", m->posted, visible);
    post_receive(h, q);
    if (!pingpong(q)) return;
    if (h == 1) {
      send_pong(q, *m, addr);
    } else if (CpuCore::local_time() < end_) {
      arrive(q, sqwqe::kSend, m->size);
    }
  }

  // Host 1 echoes a ping from the buffer it landed in (read by the HCA before the slot is
  // reused: the next ping on this QP waits for this pong).
  void send_pong(int q, const Message& ping, uint64_t addr) {
    pongs_.push_back(Message{q, ping.seq, sqwqe::kSend, ping.size, ping.posted, {}, CpuCore::local_time()});
    Message& pong = pongs_.back();
    pong.done.done = [this, p = &pong](IbCq& cq, const Wc& wc) {
      const sc_time visible = probes_.claim_cqe(1, cq.cq->cqn);
      probes_.sample_occupancy(1, cq);
      if (wc.status != 0) ++r_.errors;
      sample_latency(1, p->qp, "PONG", p->pong_posted, visible);
      pool_[1]->untrack(p->done);
    };
    pool_[1]->track(pong.done);
    in_flight_[0][size_t(q)].push_back(&pong);
    SendWr wr;
    wr.wr_id = CqPool::wr_id_of(pong.done);
    wr.flags = send_flags(sqwqe::kSend, ping.size);
    wr.sg_list = {Sge{addr, ping.size, recv_buf_.mr->lkey}};
    fb::post_send(*qp_[1][size_t(q)], wr);
  }

  // An arrival on QP q of host 0: recorded (for --record) and posted; refused if its send queue is full.
  void arrive(int q, uint8_t opcode, uint32_t size) {
    if (!o_.record_path.empty())
      record_.push_back(TracedArrival{uint64_t(std::llround((CpuCore::local_time() - start_).to_seconds() * 1e12)), q,
                                      opcode, size});
    if (workload_of(q).inject_cqes)
      inject_completion(q, size);
    else if (!post_message(q, opcode, size))
      ++r_.refused;
  }

  // A completion record for QP q's receive queue, injected into its CQ on host 0 now: it takes the
  // CQ writer's input like a transport completion would, then moderation, EQ, MSI-X and polling.
  void inject_completion(int q, uint32_t size) {
    messages_.push_back(Message{q, next_seq_[size_t(q)]++, kInjected, size, CpuCore::local_time(), {}, {}});
    Message& m = messages_.back();
    m.done.done = [this, mp = &m](IbCq& cq, const Wc& wc) { on_injected_done(*mp, cq, wc); };
    pool_[0]->track(m.done);
    CompletionRecord r;
    r.cqn = cqs_[0][size_t(cq_of_[size_t(q)])]->cq->cqn;
    r.is_send = false;
    r.opcode = cqe::kRespSend;
    r.byte_cnt = size;
    r.qpn = kInjectedQpnBase + uint32_t(q);  // a stream of records, not a QP the HCA has
    r.wr_id = CqPool::wr_id_of(m.done);
    h_[0]->hca.inject_now(r);
    ++r_.posted;
  }

  void on_injected_done(Message& m, IbCq& cq, const Wc& wc) {
    ++r_.completed;
    ++one_sided_;  // no receive on host 1 answers it
    const sc_time visible = probes_.claim_cqe(0, cq.cq->cqn);
    probes_.sample_occupancy(0, cq);
    if (wc.status != 0 || wc.byte_len != m.size) ++r_.errors;
    if (m.seq != next_done_[size_t(m.qp)]) ++r_.misordered;
    next_done_[size_t(m.qp)] = m.seq + 1;
    sample_latency(0, m.qp, "INJECTED", m.posted, visible);
    pool_[0]->untrack(m.done);
  }

  // A READ's source on host 1: slot seq mod depth of QP q holds a constant pattern, written the
  // first time a READ uses the slot (before its request can reach host 1), not for every slot at
  // set-up, which cost most of a run's instructions with large messages and many QPs.
  void fill_read_source(int q, uint64_t seq) {
    const size_t slot = slot_index(q, seq);
    if (read_src_written_[slot]) return;
    read_src_written_[slot] = true;
    data_.resize(max_size_);
    pattern(data_, q, read_source_pattern(seq));
    h_[1]->driver.memory().write(read_src_.addr + slot_offset(q, seq), data_.data(), max_size_);
  }

  // Signaled; inline when the message fits the QPs' max_inline (never a READ: it carries no data).
  uint32_t send_flags(uint8_t opcode, uint32_t size) const {
    const bool inline_data = opcode != sqwqe::kRdmaRead && size <= o_.max_inline;
    return kSendSignaled | (inline_data ? kSendInline : 0u);
  }

  // Posts one message on QP q of host 0; false if its send queue is full.
  bool post_message(int q, uint8_t opcode, uint32_t size) {
    Qp& qp = *qp_[0][size_t(q)];
    if (uint16_t(qp.sq_pi - qp.sq_ci) >= qp.sq_depth) return false;
    // A message's buffer slots (seq mod depth) stay its own until its done callback has checked
    // them, which may run after the driver polled its CQE and freed the WQE slot.
    if (next_seq_[size_t(q)] - next_done_[size_t(q)] >= uint64_t(o_.depth) ||
        slot_in_check_[slot_index(q, next_seq_[size_t(q)])])
      return false;
    messages_.push_back(Message{q, next_seq_[size_t(q)]++, opcode, size, CpuCore::local_time(), {}, {}});
    Message& m = messages_.back();
    const uint64_t off = slot_offset(q, m.seq);
    if (opcode != sqwqe::kRdmaRead) {
      data_.resize(size);
      pattern(data_, q, m.seq);
      h_[0]->driver.memory().write(src_.addr + off, data_.data(), size);
    }
    m.done.done = [this, mp = &m](IbCq& cq, const Wc& wc) { on_send_done(*mp, cq, wc); };
    pool_[0]->track(m.done);
    SendWr wr;
    wr.wr_id = CqPool::wr_id_of(m.done);
    wr.opcode = opcode;
    wr.flags = send_flags(opcode, size);
    wr.sg_list = {(opcode == sqwqe::kRdmaRead ? read_dst_ : src_).sge(off, size)};
    if (opcode == sqwqe::kRdmaRead) fill_read_source(q, m.seq);
    wr.remote_addr = (opcode == sqwqe::kRdmaRead ? read_src_ : write_buf_).addr + off;
    wr.rkey = (opcode == sqwqe::kRdmaRead ? read_src_ : write_buf_).mr->rkey;
    if (opcode == sqwqe::kSend) in_flight_[1][size_t(q)].push_back(&m);
    fb::post_send(qp, wr);
    ++r_.posted;
    if (opcode == sqwqe::kSend && pingpong(q)) ++pings_;
    return true;
  }

  void on_send_done(Message& m, IbCq& cq, const Wc& wc) {
    ++r_.completed;
    const sc_time visible = probes_.claim_cqe(0, cq.cq->cqn);
    probes_.sample_occupancy(0, cq);
    if (wc.status != 0) ++r_.errors;
    if (m.seq != next_done_[size_t(m.qp)]) ++r_.misordered;
    next_done_[size_t(m.qp)] = m.seq + 1;
    sample_latency(0, m.qp, m.opcode == sqwqe::kRdmaWrite ? "RDMA_WRITE" : m.opcode == sqwqe::kRdmaRead ? "RDMA_READ" : "SEND",
                   m.posted, visible);
    const uint64_t off = slot_offset(m.qp, m.seq);
    if (m.opcode == sqwqe::kRdmaWrite) check_write(m.qp, m.seq, m.size, off);
    if (m.opcode == sqwqe::kRdmaRead)
      check_data(0, read_dst_.addr + off, m.qp, read_source_pattern(m.seq), m.size);
    if (m.opcode == sqwqe::kRdmaWrite || m.opcode == sqwqe::kRdmaRead) ++one_sided_;
    pool_[0]->untrack(m.done);
  }

  void wait_until(const sc_time& at) {
    if (at > sc_core::sc_time_stamp()) sc_core::wait(at - sc_core::sc_time_stamp());
  }

  // One round trip at the configured latencies: the IB link both ways, PCIe to and from each HCA,
  // interrupt delivery and the slowest polling context.
  sc_time round_trip() const {
    const sc_time poll = std::max({o_.cpu.softirq_latency, o_.cpu.workqueue_latency, o_.cpu.thread_latency});
    return 2 * o_.link.latency + 4 * o_.pcie.latency + o_.cpu.irq_delivery + poll;
  }

  // The QPs' connection parameters. The local ACK timeout (4.096 us x 2^timeout) is the usual 14
  // (67 ms), raised when the link is slow enough that four round trips would not fit in it:
  // a timeout shorter than the round trip retransmits every packet and fails every QP.
  fb::RcParams rc_params() const {
    fb::RcParams rc;
    rc.path_mtu = o_.path_mtu;
    const double need_us = 4 * round_trip().to_seconds() * 1e6;
    while (rc.timeout < 31 && 4.096 * double(uint64_t(1) << rc.timeout) < need_us) ++rc.timeout;
    return rc;
  }

  // How long the traffic may take to finish once the arrivals stop: a base of 2 ms, the longest
  // moderation period, twenty round trips at the configured latencies (the IB link both ways,
  // PCIe to and from each HCA, interrupt delivery, the slowest polling context: a ping-pong, a
  // READ, a re-arm and its poll), and, when packets may be lost or damaged, every retransmission
  // a QP is allowed (retry_cnt + 1 local ACK timeouts). Latencies anywhere in their documented
  // ranges then leave room for the last messages instead of failing the run.
  sc_time drain_budget() const {
    uint16_t longest_period = 0;
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < o_.cqs; ++c) longest_period = std::max(longest_period, o_.moderation_of(h, c).mod.period_us);
    sc_time budget = sc_time(2000 + longest_period, sc_core::SC_US) + 20 * round_trip();
    if (o_.link.loss_rate > 0 || !o_.link.faults.empty() || o_.fault_flip_payload) {
      const fb::RcParams rc = rc_params();
      budget += double(rc.retry_cnt + 1) * sc_time(4.096 * double(uint64_t(1) << rc.timeout), sc_core::SC_US);
    }
    return budget;
  }

  // The drain may go on while completions keep coming (a backlog behind a full link or a slow
  // receiver drains at its own pace), up to this long after the arrivals stop.
  sc_time drain_cap() const { return 20 * drain_budget(); }

  // Waits until every message has completed (S27). Gives up when drain_budget() passes without a
  // completion (something is stuck) or after drain_cap(), and says what is still outstanding.
  void drain() {
    const sc_time began = sc_core::sc_time_stamp(), cap = began + drain_cap(), window = drain_budget();
    auto expected_recvs = [&] { return r_.posted - one_sided_ + pings_; };
    auto finished = [&] { return r_.completed == r_.posted && r_.recvs == expected_recvs() && deferred_checks_ == 0; };
    uint64_t seen = r_.completed + r_.recvs;
    sc_time last_progress = began;
    while (!finished()) {
      const sc_time now = sc_core::sc_time_stamp();
      if (now >= cap || now - last_progress >= window) break;
      sc_core::wait(sc_time(10, sc_core::SC_US));
      if (r_.completed + r_.recvs != seen) {
        seen = r_.completed + r_.recvs;
        last_progress = sc_core::sc_time_stamp();
      }
    }
    drained_ = finished();
    if (!drained_) r_.outstanding = describe_outstanding(sc_core::sc_time_stamp() - began, sc_core::sc_time_stamp() - last_progress);
  }

  // What a drain that gave up leaves: counts, and the QPs with work still in flight.
  std::string describe_outstanding(const sc_time& drained_for, const sc_time& idle_for) const {
    constexpr int kListed = 5;  // QPs named; the rest are counted
    uint64_t sends = 0, recvs = 0;
    int with_work = 0;
    std::string qps_text;
    for (int q = 0; q < qps(); ++q) {
      const uint64_t s = next_seq_[size_t(q)] - next_done_[size_t(q)];
      const uint64_t r = in_flight_[1][size_t(q)].size() + in_flight_[0][size_t(q)].size();
      sends += s;
      recvs += r;
      if (!s && !r) continue;
      if (with_work++ < kListed)
        qps_text += fmt::format("{}QP {}: {} sends, {} receives", qps_text.empty() ? ": " : "; ", q, s, r);
    }
    if (with_work > kListed) qps_text += fmt::format("; and {} more QPs", with_work - kListed);
    return fmt::format("{} sends and {} receives still outstanding {:.0f} us after the arrivals stopped "
                       "({:.0f} us without a completion){}",
                       sends, recvs, drained_for.to_seconds() * 1e6, idle_for.to_seconds() * 1e6, qps_text);
  }

  void measure() {
    wait_until(measure_from_);
    for (int h = 0; h < 2; ++h) first_[h] = take_snapshot(*h_[h], cqs_[h]);
  }

  TrafficResult result() {
    TrafficResult& r = r_;
    const double measured_s = (last_[0].at - first_[0].at).to_seconds();
    r.measured_s = measured_s;
    const TransportStats& t0 = h_[0]->hca.transport.stats();
    const TransportStats& t1 = h_[1]->hca.transport.stats();
    r.packets_out = t0.packets_sent;
    r.packets_back = t1.packets_sent;
    r.packets_lost = sys_.ib.stats(0).dropped + sys_.ib.stats(1).dropped;
    r.retransmits = t0.retransmits + t1.retransmits;
    r.link_gbps = stop_ > start_ ? double(sys_.ib.stats(0).bytes) * 8 / (stop_ - start_).to_seconds() / 1e9 : 0;
    for (int h = 0; h < 2; ++h) {
      HostStats& hs = r.host[h];
      const Snapshot &a = first_[h], &b = last_[h];
      window_stats(hs, a, b);
      hs.overflows = h_[h]->hca.cq.stats().overflows;
      hs.cq_occupancy_mean = probes_.occupancy_mean(h);
      hs.cq_occupancy_max = probes_.occupancy_max(h);
      for (IbCq* cq : cqs_[h])
        if (cq->dim) hs.dim_decisions += cq->dim->decisions(), hs.dim_changes += cq->dim->changes();
      for (size_t c = 0; c < cqs_[h].size() && c < a.cq_cqes.size() && c < b.cq_cqes.size(); ++c) {
        // The moderation the device holds at the end (DIM may have changed it), not the scenario's.
        const CqConfig& cfg = h_[h]->hca.cq.context(cqs_[h][c]->cq->cqn).cfg;
        CqStats s;
        s.host = h;
        s.cq = int(c);
        s.vector = int(cqs_[h][c]->cq->comp_vector);
        s.mod_count = cfg.mod_count;
        s.mod_period_us = cfg.mod_period;
        s.adaptive = cqs_[h][c]->dim != nullptr;
        s.cqes = b.cq_cqes[c] - a.cq_cqes[c];
        s.events = b.cq_events[c] - a.cq_events[c];
        for (int k = 0; k < kEventCauses; ++k) s.events_by[k] = b.cq_events_by[c][size_t(k)] - a.cq_events_by[c][size_t(k)];
        s.latency = probes_.latency_of_cq(h, int(c));
        r.cqs.push_back(s);
      }
    }
    r.latency = probes_.latency_by_op();
    r.series = probes_.series();
    r.ok = drained_ && r.errors == 0 && r.misordered == 0 && r.data_errors == 0 && r.host[0].overflows == 0 &&
           r.host[1].overflows == 0;
    return r;
  }

  TrafficOptions o_;
  std::vector<QpGroup> groups_;
  std::vector<int> group_of_, cq_of_;  // per QP: its group, its CQ index
  uint32_t max_size_;
  System sys_;
  Node* h_[2];
  std::unique_ptr<CqPool> pool_[2];
  std::vector<IbCq*> cqs_[2];
  Pd* pd_[2] = {};
  std::vector<Qp*> qp_[2];
  fb::Buffer src_, read_dst_, pong_dst_, recv_buf_, write_buf_, read_src_;
  Probes probes_;
  std::deque<Message> messages_, pongs_;  // stable addresses: each holds the CqeDone its wr_id names
  std::vector<std::deque<Message*>> in_flight_[2];  // SENDs (and pongs) each host's receives await
  std::vector<CqeDone> recv_done_[2];
  std::vector<uint64_t> recv_posted_[2];
  std::vector<uint64_t> next_seq_, next_done_;
  uint64_t deferred_checks_ = 0;      // WRITE data checks waiting for host 1's PCIe link
  std::vector<bool> slot_in_check_;   // per QP and slot: its WRITE's data check is waiting
  std::vector<bool> read_src_written_;  // per QP and slot: its READ source pattern is in host 1's memory
  std::vector<TracedArrival> record_;
  std::vector<uint8_t> data_, expect_, got_;
  uint64_t one_sided_ = 0, pings_ = 0;
  sc_time start_, measure_from_, end_, stop_;
  Snapshot first_[2], last_[2];
  bool drained_ = false;
  TrafficResult r_;
};

}  // namespace

TrafficResult run_traffic(const TrafficOptions& o) { return TrafficRun(o).run(); }

}  // namespace vhca

#include "cosim/cosim.h"

#include <cstdio>

#include "cosim/fst.h"

#include <algorithm>
#include <chrono>
#include <array>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "model/common/bytes.h"
#include "cosim/rtl_pipelined_writer.h"
#include "model/cq/cq_writer_core.h"
#include "model/cq/cq_writer_pipeline.h"
#include "model/regs/tables.h"

namespace vhca {

std::string CosimInput::describe() const {
  switch (kind) {
    case Kind::control:
      return fmt::format("cycle {}: control op {} CQ {} log_size {} count {} period {} mode {}", cycle, int(control.op),
                         control.cqn, control.cfg.log_size, control.cfg.mod_count, control.cfg.mod_period,
                         control.cfg.period_mode == PeriodMode::cqe ? "cqe" : "eqe");
    case Kind::arm:
      return fmt::format("cycle {}: arm CQ {} sn {} {} ci {:#x}", cycle, arm.cqn, arm.sn,
                         arm.cmd == ArmCmd::next ? "NEXT" : "SOLICITED", arm.ci);
    case Kind::completion:
      return fmt::format("cycle {}: completion CQ {} wr_id {:#x} {} syndrome {:#x} se {}", cycle, completion.cqn,
                         completion.wr_id, completion.is_send ? "send" : "recv", completion.syndrome, completion.se);
    case Kind::ci_response:
      return fmt::format("cycle {}: doorbell record CQ {} ci {:#x} ok {}", cycle, ci.cqn, ci.ci, ci.ok);
    case Kind::access_error:
      return fmt::format("cycle {}: CQE write failure CQ {}", cycle, cqn);
  }
  return "?";
}

std::string CosimReport::summary() const {
  std::string s = fmt::format(
      "cycles {}  CQEs {}  outputs compared {}  CQ contexts compared {}  mismatches {}\n"
      "coverage: CQEs {}  events {} (by count {}, by period {}, immediate {}, at arm {})  arms {} (owed CQEs {}, "
      "upgraded {}, absorbed {}, stale {})\n"
      "          arm kinds: NEXT {}  SOLICITED {}\n"
      "          CI refreshes {}  overflows {}  owner wraps {}  dropped {}  bad records {}  timer expiries {}  "
      "output stall cycles {}\n",
      cycles, cqes, compared, contexts_compared, mismatches, coverage.cqes, coverage.events, coverage.events_by_count,
      coverage.events_by_period, coverage.events_immediate, coverage.events_at_arm, coverage.arms,
      coverage.arms_owed, coverage.arms_upgraded, coverage.arms_ignored_pending, coverage.arms_stale, arms_next, arms_solicited,
      coverage.ci_refreshes,
      coverage.overflows, coverage.owner_wraps, coverage.dropped, coverage.bad_records, coverage.timer_expiries,
      output_stall_cycles);
  s += fmt::format("pipeline: back-to-back on one CQ (hazard stalls) {}  one apart (write bypass) {}  completions "
                     "squashed {}  expiries re-inserted {}  stale expiries {}  expiring on one tick {}  holds {}\n"
                     "          quiet cycles (the next clock wanted later than the next cycle, compared) {}\n",
                     pipeline.hazard_stalls, pipeline.bypass_written, pipeline.squashed, pipeline.reinserted,
                     pipeline.stale_expiries, pipeline.same_tick, pipeline.holds, quiet_cycles);
  for (const std::string& v : protocol_violations) s += "protocol: " + v + "\n";
  if (!first_mismatch.empty()) s += first_mismatch;
  return s;
}

namespace {

// One engine with its own output streams and what it reported on the current cycle.
struct Side {
  std::unique_ptr<CqWriterEngine> engine;
  Stream<DmaWrite> dma{"m_dma", 4};
  Stream<DeviceEvent> events{"m_event", 4};
  Stream<CiRequest> ci_req{"m_ci_req", 2};
  uint64_t dma_seen = 0, events_seen = 0, ci_seen = 0;
  std::vector<std::pair<uint8_t, uint32_t>> bad_doorbells;  // this cycle
  std::vector<int> controls_done;                           // this cycle

  explicit Side(std::unique_ptr<CqWriterEngine> e) : engine(std::move(e)) {
    engine->m_dma = &dma;
    engine->m_event = &events;
    engine->m_ci_req = &ci_req;
    engine->on_bad_doorbell.add([this](uint8_t r, uint32_t n) { bad_doorbells.emplace_back(r, n); });
    engine->on_control_done.add([this](const CqControl& c, uint64_t) { controls_done.push_back(int(c.op)); });
  }
};

bool push_input(CqWriterEngine& e, const CosimInput& in, uint64_t c) {
  switch (in.kind) {
    case CosimInput::Kind::control:
      if (!e.s_ctl.can_push(c)) return false;
      e.s_ctl.push(in.control, c);
      return true;
    case CosimInput::Kind::arm:
      if (!e.s_arm.can_push(c)) return false;
      e.s_arm.push(in.arm, c);
      return true;
    case CosimInput::Kind::completion:
      if (!e.s_cpl.can_push(c)) return false;
      e.s_cpl.push(in.completion, c);
      return true;
    case CosimInput::Kind::ci_response:
      if (!e.s_ci.can_push(c)) return false;
      e.s_ci.push(in.ci, c);
      return true;
    case CosimInput::Kind::access_error:
      if (!e.s_access_error.can_push(c)) return false;
      e.s_access_error.push(in.cqn, c);
      return true;
  }
  return false;
}

CqConfig cq_config(uint32_t cqn, uint8_t log_size) {
  CqConfig cfg;
  cfg.log_size = log_size;
  cfg.base = 0x10'0000'0000ull + (uint64_t(cqn) << 28);
  cfg.dbr = 0x1000 + uint64_t(cqn) * 8;
  cfg.eqn = 1 + cqn % 3;
  return cfg;
}

// xoshiro256** (Blackman and Vigna): fully specified, so a seed gives the same stream on every
// platform, and several times cheaper than mt19937_64, which dominated the model-alone run.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) {  // splitmix64 expands the seed
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      w = z ^ (z >> 31);
    }
  }
  uint64_t operator()() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// The host side of the random stimulus: what a driver would do, decided from the reference
// engine's outputs.
class Environment {
 public:
  Environment(uint64_t seed, uint32_t num_cqs) : rng_(seed), cqs_(num_cqs) {}

  template <typename Push>
  void generate(uint64_t c, Push&& push) {
    // Scheduled inputs (doorbell-record responses, event handling) first.
    while (!scheduled_.empty() && scheduled_.begin()->first <= c) {
      CosimInput in = scheduled_.begin()->second;
      in.cycle = c;
      if (in.kind == CosimInput::Kind::ci_response) in.ci.ci = cqs_[in.ci.cqn].consumed;
      if (in.kind == CosimInput::Kind::arm) prepare_arm(in);
      if (!push(in)) break;  // the stream is full: retry next cycle
      scheduled_.erase(scheduled_.begin());
    }
    if (created_ < cqs_.size() - 1) {  // bring every CQ (CQN 1..) up first
      const uint32_t cqn = created_ + 1;
      if (push(create(cqn, c))) ++created_;
      return;
    }
    // One draw decides this cycle's activities, 16 bits of resolution each.
    const uint64_t d = draw_ = rng_();
    auto slice = [d](int i, double p) { return double((d >> (16 * i)) & 0xFFFF) < p * 65536.0; };
    if (slice(0, 0.6)) push(random_completion(c));
    if (slice(1, 0.05)) poll(pick(), c);
    if (slice(2, 0.01)) push(random_arm(c));
    if (!slice(3, 0.0032)) return;  // the rare ones share the last slice
    const double rare = double(rng_() >> 11) * (1.0 / 9007199254740992.0) * 0.0032;
    if (rare < 0.002) push(random_moderation(c));
    else if (rare < 0.0024) start_resize(c, push);
    else if (rare < 0.0026) {
      CosimInput in;
      in.kind = CosimInput::Kind::access_error;
      in.cycle = c;
      in.cqn = pick();
      push(in);
    }
  }

  void observe(uint64_t c, const DmaWrite* w, const DeviceEvent* ev, const CiRequest* req) {
    if (w) ++cqs_[w->id].produced;
    if (req) {
      CosimInput in;
      in.kind = CosimInput::Kind::ci_response;
      in.ci = CiResponse{req->cqn, 0, !chance(0.002)};
      scheduled_.emplace(c + 2 + rng_() % 300, in);
    }
    if (ev && ev->type == eqe::kCompletion) {
      HostCq& q = cqs_[ev->cqn];
      q.sn = (q.sn + 1) & 3;  // what the driver does on each completion event
      CosimInput in;
      in.kind = CosimInput::Kind::arm;
      in.arm.cqn = ev->cqn;
      scheduled_.emplace(c + 50 + rng_() % 2000, in);
    }
    if (ev && ev->type == eqe::kCqError) {  // the driver destroys and re-creates the CQ
      CosimInput destroy;
      destroy.kind = CosimInput::Kind::control;
      destroy.control.op = CqControl::Op::destroy;
      destroy.control.cqn = ev->cqn;
      const uint64_t at = c + 100 + rng_() % 1000;
      scheduled_.emplace(at, destroy);
      scheduled_.emplace(at + 1, create(ev->cqn, at + 1));
    }
  }

  bool chance(double p) { return double(rng_() >> 11) * (1.0 / 9007199254740992.0) < p; }
  Rng& rng() { return rng_; }
  uint64_t last_draw() const { return draw_; }

 private:
  struct HostCq {
    uint8_t log_size = 4;
    uint32_t produced = 0, consumed = 0;
    uint8_t sn = 0;
  };

  // Above 64 CQs half the traffic goes to 16 hot CQs, so that one CQ still sees back-to-back
  // operations (the pipeline's bypass) while the rest of the table is used too.
  uint32_t pick() {
    const uint64_t d = rng_();
    if (cqs_.size() > 64 && (d >> 63)) return 1 + uint32_t(d % 16);
    return 1 + uint32_t(d % (cqs_.size() - 1));
  }

  CosimInput create(uint32_t cqn, uint64_t c) {
    HostCq& q = cqs_[cqn];
    q = HostCq{};
    q.log_size = uint8_t(1 + rng_() % 8);
    CosimInput in;
    in.kind = CosimInput::Kind::control;
    in.cycle = c;
    in.control.op = CqControl::Op::create;
    in.control.cqn = cqn;
    in.control.cfg = cq_config(cqn, q.log_size);
    in.control.cfg.mod_count = uint16_t(chance(0.5) ? 0 : rng_() % 16);
    in.control.cfg.mod_period = uint16_t(chance(0.5) ? 0 : 1 + rng_() % 8);
    in.control.cfg.period_mode = chance(0.5) ? PeriodMode::cqe : PeriodMode::eqe;
    in.control.cfg.overrun_ignore = chance(0.03);
    in.control.cfg.always_armed = chance(0.05);
    return in;
  }

  void poll(uint32_t cqn, uint64_t) { cqs_[cqn].consumed = cqs_[cqn].produced; }

  // Event handling: poll some or all, then re-arm with the current sequence number (sometimes a
  // stale one), NEXT or SOLICITED, carrying the consumer index or the index of what was seen.
  void prepare_arm(CosimInput& in) {
    HostCq& q = cqs_[in.arm.cqn];
    if (chance(0.8)) q.consumed = q.produced;
    in.arm.sn = chance(0.03) ? uint8_t((q.sn + 3) & 3) : q.sn;
    in.arm.cmd = chance(0.2) ? ArmCmd::solicited : ArmCmd::next;
    in.arm.ci = (chance(0.5) ? q.consumed : q.produced) & kIndexMask;
  }

  CosimInput random_completion(uint64_t c) {
    CosimInput in;
    in.kind = CosimInput::Kind::completion;
    in.cycle = c;
    CompletionRecord& r = in.completion;
    // Four draws fill every field (bit slices of each draw).
    const uint64_t a = rng_(), b = rng_(), e = rng_();
    r.wr_id = rng_();
    const uint32_t choose = uint32_t(a & 0xFFFF);  // 1/65536 steps
    r.cqn = choose < 131 ? uint32_t(cqs_.size() + (a >> 16) % 8) : pick();  // now and then (0.2 %) a CQ that does not exist
    r.is_send = (a >> 20) & 1;
    r.opcode = r.is_send ? cqe::kReq : uint8_t(cqe::kRespWriteImm + ((a >> 21) & 0xFF) % 3);
    r.send_opcode = uint8_t(a >> 29);
    r.syndrome = ((a >> 37) & 0xFF) < 13 ? uint8_t(1 + ((a >> 45) & 0xFF) % 0x16) : 0;  // 5 %
    r.vendor_syndrome = uint8_t(a >> 53);
    r.imm_present = ((a >> 61) & 7) < 2;  // 25 %
    r.byte_cnt = uint32_t(b);
    r.imm = uint32_t(b >> 32);
    r.qpn = uint32_t(e) & kIndexMask;
    r.src_qpn = uint32_t(e >> 24) & kIndexMask;
    r.slid = uint16_t(e >> 48);
    r.sl = uint8_t((a >> 16) & 15);
    r.grh = (e >> 63) & 1;
    r.pkey_index = uint16_t(b >> 8);
    r.se = ((b >> 56) & 7) < 2;  // 25 %
    r.wqe_counter = uint16_t(r.wr_id >> 7);
    return in;
  }

  CosimInput random_arm(uint64_t c) {
    CosimInput in;
    in.kind = CosimInput::Kind::arm;
    in.cycle = c;
    in.arm.cqn = chance(0.02) ? uint32_t(cqs_.size() + rng_() % 4) : pick();
    if (in.arm.cqn < cqs_.size()) {
      prepare_arm(in);
      if (chance(0.05)) in.arm.ci = uint32_t(rng_()) & kIndexMask;  // out of range, usually
    }
    return in;
  }

  CosimInput random_moderation(uint64_t c) {
    CosimInput in;
    in.kind = CosimInput::Kind::control;
    in.cycle = c;
    in.control.op = CqControl::Op::modify_moderation;
    in.control.cqn = pick();
    in.control.cfg = cq_config(in.control.cqn, cqs_[in.control.cqn].log_size);
    in.control.cfg.mod_count = uint16_t(chance(0.3) ? 0 : rng_() % 32);
    in.control.cfg.mod_period = uint16_t(chance(0.3) ? 0 : 1 + rng_() % 10);
    in.control.cfg.period_mode = chance(0.5) ? PeriodMode::cqe : PeriodMode::eqe;
    return in;
  }

  template <typename Push>
  void start_resize(uint64_t c, Push&& push) {
    const uint32_t cqn = pick();
    CosimInput begin;
    begin.kind = CosimInput::Kind::control;
    begin.cycle = c;
    begin.control.op = CqControl::Op::resize_begin;
    begin.control.cqn = cqn;
    if (!push(begin)) return;
    HostCq& q = cqs_[cqn];
    CosimInput end = begin;
    if (chance(0.2)) {
      end.control.op = CqControl::Op::resize_abort;
    } else {
      uint8_t log = 1;
      while ((1u << log) < index_distance(q.consumed, q.produced) || log < q.log_size / 2) ++log;
      q.log_size = uint8_t(std::min<uint32_t>(log + rng_() % 2, 10));
      end.control.op = CqControl::Op::resize_commit;
      end.control.cfg = cq_config(cqn, q.log_size);
      end.control.cfg.base += 0x800'0000;
    }
    scheduled_.emplace(c + 5 + rng_() % 60, end);
  }

  Rng rng_;
  uint64_t draw_ = 0;
  std::vector<HostCq> cqs_;
  std::multimap<uint64_t, CosimInput> scheduled_;
  uint32_t created_ = 0;
};

std::string field_of_cqe_byte(const uint8_t* a, const uint8_t* b) {
  for (const FormatSpec& f : formats()) {
    if (std::string(f.name) != "CQE") continue;
    for (const FieldSpec& s : f.fields)
      if (get_field(a, s.field) != get_field(b, s.field))
        return fmt::format("cqe.{} expected {:#x} actual {:#x}", s.name, get_field(a, s.field), get_field(b, s.field));
  }
  return "cqe: a reserved byte differs";
}

class Lockstep {
 public:
  Lockstep(const CosimOptions& opt, uint64_t trace_from, uint64_t trace_to, const std::string& trace_path)
      : opt_(opt), env_(opt.seed, opt.num_cqs) {
    CqeWriterConfig cfg;
    cfg.num_cqs = opt.num_cqs;
    cfg.arm_event = opt.arm_event;
    if (opt.mode != CosimMode::rtl_only) {
      model_ = std::make_unique<Side>(std::make_unique<CqWriterPipeline>(cfg, 500.0));
      // Compared with the RTL's o_busy: the clock it wants whenever anything is inside it. (In the
      // HCA, unwatched, the model sleeps through busy cycles that only move items along; the
      // RTL in the HCA is clocked on each, with byte-identical results: vhca_sim_run_rtl_twin.)
      model_->engine->wake_every_busy_cycle = true;
    }
    if (opt.mode != CosimMode::model_only) {
      std::unique_ptr<RtlEngine> rtl = make_rtl_pipelined_writer(cfg, opt.faults, opt.rtl_init_seed);
      if (!trace_path.empty()) rtl->trace(trace_path, trace_from, trace_to);
      rtl_ = std::make_unique<Side>(std::move(rtl));
    }
    for (const CosimInput& in : opt.script) script_.emplace(in.cycle, in);
  }

  CosimReport run(uint64_t stop_after) {
    const auto t0 = std::chrono::steady_clock::now();
    Side& ref = model_ ? *model_ : *rtl_;
    uint64_t last_script = script_.empty() ? 0 : script_.rbegin()->first;
    const uint64_t limit = opt_.max_cycles ? opt_.max_cycles : (opt_.random ? UINT64_MAX : last_script + 20000);
    uint64_t c = 1;
    for (; c <= std::min(limit, stop_after); ++c) {
      auto push = [&](const CosimInput& in) { return push_both(in, c); };
      while (!script_.empty() && script_.begin()->first <= c) {
        if (!push(script_.begin()->second)) break;
        script_.erase(script_.begin());
      }
      if (opt_.random) env_.generate(c, push);
      if (model_) step(*model_, c);
      if (rtl_) step(*rtl_, c);
      if (model_ && rtl_) compare(c);
      observe(ref, c);
      consume(c);
      if (report_.mismatches) break;
      if (opt_.random && ref.engine->stats().cqes >= opt_.cqes) break;
    }
    report_.cycles = c;
    report_.cqes = ref.engine->stats().cqes;
    report_.coverage = ref.engine->stats();
    report_.coverage.output_stalls = 0;
    if (auto* p = dynamic_cast<CqWriterPipeline*>(ref.engine.get())) report_.pipeline = p->coverage();
    if (model_ && rtl_) {
      CqeWriterStats a = model_->engine->stats(), b = rtl_->engine->stats();
      report_.coverage_equal = a.cqes == b.cqes && a.events == b.events && a.events_by_count == b.events_by_count &&
                               a.events_by_period == b.events_by_period && a.events_immediate == b.events_immediate &&
                               a.events_at_arm == b.events_at_arm && a.arms == b.arms && a.arms_owed == b.arms_owed && a.arms_upgraded == b.arms_upgraded &&
                               a.arms_ignored_pending == b.arms_ignored_pending && a.arms_stale == b.arms_stale &&
                               a.ci_refreshes == b.ci_refreshes && a.overflows == b.overflows &&
                               a.owner_wraps == b.owner_wraps && a.dropped == b.dropped && a.bad_records == b.bad_records &&
                               a.timer_expiries == b.timer_expiries;
    }
    report_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report_;
  }

 private:
  bool push_both(const CosimInput& in, uint64_t c) {
    CosimInput stamped = in;
    stamped.cycle = c;
    bool ok_model = true, ok_rtl = true;
    // Each side accepts or refuses alike (same queue states); push only if both can.
    auto can = [&](Side& s) {
      CqWriterEngine& e = *s.engine;
      switch (in.kind) {
        case CosimInput::Kind::control: return e.s_ctl.can_push(c);
        case CosimInput::Kind::arm: return e.s_arm.can_push(c);
        case CosimInput::Kind::completion: return e.s_cpl.can_push(c);
        case CosimInput::Kind::ci_response: return e.s_ci.can_push(c);
        case CosimInput::Kind::access_error: return e.s_access_error.can_push(c);
      }
      return false;
    };
    if (model_) ok_model = can(*model_);
    if (rtl_) ok_rtl = can(*rtl_);
    if (model_ && rtl_ && ok_model != ok_rtl) {
      mismatch(c, fmt::format("input acceptance differs: model {} RTL {} for {}", ok_model, ok_rtl, stamped.describe()));
      return false;
    }
    if (!ok_model || !ok_rtl) return false;
    if (model_) push_input(*model_->engine, stamped, c);
    if (rtl_) push_input(*rtl_->engine, stamped, c);
    recent_[recent_count_++ % recent_.size()] = stamped;
    if (in.kind == CosimInput::Kind::arm) ++(in.arm.cmd == ArmCmd::next ? report_.arms_next : report_.arms_solicited);
    return true;
  }

  void step(Side& s, uint64_t c) {
    s.bad_doorbells.clear();
    s.controls_done.clear();
    if (s.engine->holds_outputs() || s.engine->outputs_ready(c)) {
      s.engine->act(c);
    } else {
      s.engine->note_output_stall();
      if (&s == (model_ ? model_.get() : rtl_.get())) ++report_.output_stall_cycles;
    }
  }

  void mismatch(uint64_t c, const std::string& what) {
    if (report_.mismatches++) return;
    report_.first_mismatch_cycle = c;
    std::string s = fmt::format("FIRST MISMATCH at cycle {}: {}\nlast inputs:\n", c, what);
    const size_t n = std::min<size_t>(recent_count_, recent_.size());
    for (size_t i = recent_count_ - n; i < recent_count_; ++i) s += "  " + recent_[i % recent_.size()].describe() + "\n";
    report_.first_mismatch = s;
  }

  void compare(uint64_t c) {
    Side& m = *model_;
    Side& r = *rtl_;
    const uint64_t md = m.dma.pushed() - m.dma_seen, rd = r.dma.pushed() - r.dma_seen;
    const uint64_t me = m.events.pushed() - m.events_seen, re = r.events.pushed() - r.events_seen;
    const uint64_t mc = m.ci_req.pushed() - m.ci_seen, rc = r.ci_req.pushed() - r.ci_seen;
    if (md != rd) return mismatch(c, fmt::format("m_dma: model wrote {} CQE(s), RTL {}", md, rd));
    if (me != re) return mismatch(c, fmt::format("m_event: model raised {} event(s), RTL {}", me, re));
    if (mc != rc) return mismatch(c, fmt::format("m_ci_req: model requested {} read(s), RTL {}", mc, rc));
    if (md) {
      ++report_.compared;
      const DmaWrite &a = m.dma.back(), &b = r.dma.back();
      if (a.addr != b.addr) return mismatch(c, fmt::format("m_dma.addr expected {:#x} actual {:#x}", a.addr, b.addr));
      if (a.id != b.id) return mismatch(c, fmt::format("m_dma.cqn expected {} actual {}", a.id, b.id));
      if (a.data != b.data) return mismatch(c, "m_dma " + field_of_cqe_byte(a.data.data(), b.data.data()));
    }
    if (me) {
      ++report_.compared;
      const DeviceEvent &a = m.events.back(), &b = r.events.back();
      if (a.type != b.type || a.eqn != b.eqn || a.cqn != b.cqn || a.syndrome != b.syndrome || a.data != b.data)
        return mismatch(c, fmt::format("m_event expected {{type {:#x} eqn {} cqn {} syndrome {} pi {:#x}}} actual "
                                       "{{type {:#x} eqn {} cqn {} syndrome {} pi {:#x}}}",
                                       a.type, a.eqn, a.cqn, a.syndrome, a.data, b.type, b.eqn, b.cqn, b.syndrome, b.data));
    }
    if (mc) {
      ++report_.compared;
      const CiRequest &a = m.ci_req.back(), &b = r.ci_req.back();
      if (a.cqn != b.cqn || a.dbr != b.dbr)
        return mismatch(c, fmt::format("m_ci_req expected {{cqn {} dbr {:#x}}} actual {{cqn {} dbr {:#x}}}", a.cqn, a.dbr,
                                       b.cqn, b.dbr));
    }
    if (m.bad_doorbells != r.bad_doorbells) return mismatch(c, "bad-doorbell reports differ");
    const auto& violations = static_cast<RtlEngine&>(*r.engine).protocol_violations();
    if (violations.size() > report_.protocol_violations.size()) {
      report_.protocol_violations = violations;
      return mismatch(c, "stream protocol broken at the RTL's pins: " + violations.back());
    }
    if (m.controls_done != r.controls_done) return mismatch(c, "control completions differ");
    // The pipelined writer asks for the clock from its pins (o_busy, o_timers): it must ask for the
    // same next cycle as its model, or an event-driven run would skip an edge it needs.
    {
      const uint64_t wm = m.engine->next_cycle(c), wr = r.engine->next_cycle(c);
      if (wm != wr) return mismatch(c, fmt::format("next clock wanted: model cycle {} RTL cycle {}", wm, wr));
      if (wm > c + 1) ++report_.quiet_cycles;
    }
    report_.compared += m.bad_doorbells.size() + m.controls_done.size();
    // The pipelined writer's table means nothing until its clearing sweep is done.
    if (c > static_cast<CqWriterPipeline&>(*m.engine).clearing_cycles())
      compare_context(c, uint32_t(c % opt_.num_cqs));
  }

  // Hidden state: one CQ context a cycle, round robin, read through the RTL's query port, so that
  // a divergence shows before it reaches an output (a moderation counter off by one may take
  // thousands of cycles to change an event).
  void compare_context(uint64_t c, uint32_t cqn) {
    const CqContext a = model_->engine->context(cqn), b = rtl_->engine->context(cqn);
    ++report_.contexts_compared;
    if (a.valid != b.valid) return mismatch(c, fmt::format("CQ {} context.valid expected {} actual {}", cqn, a.valid, b.valid));
    if (!a.valid) return;
    auto field = [&](const char* name, uint64_t x, uint64_t y) {
      if (x != y && !report_.mismatches)
        mismatch(c, fmt::format("CQ {} context.{} expected {:#x} actual {:#x}", cqn, name, x, y));
    };
    field("state", uint64_t(a.state), uint64_t(b.state));
    field("pi", a.pi, b.pi);
    field("ci", a.ci, b.ci);
    field("arm_sn", a.arm_sn, b.arm_sn);
    field("last_notified", a.last_notified, b.last_notified);
    field("mod_pending", a.mod_pending, b.mod_pending);
    field("timer_deadline", a.timer_deadline, b.timer_deadline);
    field("mod_count", a.cfg.mod_count, b.cfg.mod_count);
    field("mod_period", a.cfg.mod_period, b.cfg.mod_period);
    field("log_size", a.cfg.log_size, b.cfg.log_size);
    field("eqn", a.cfg.eqn, b.cfg.eqn);
  }

  void observe(Side& ref, uint64_t c) {
    const DmaWrite* w = ref.dma.pushed() > ref.dma_seen ? &ref.dma.back() : nullptr;
    const DeviceEvent* ev = ref.events.pushed() > ref.events_seen ? &ref.events.back() : nullptr;
    const CiRequest* req = ref.ci_req.pushed() > ref.ci_seen ? &ref.ci_req.back() : nullptr;
    if (opt_.random) env_.observe(c, w, ev, req);
    for (Side* s : {model_.get(), rtl_.get()}) {
      if (!s) continue;
      s->dma_seen = s->dma.pushed();
      s->events_seen = s->events.pushed();
      s->ci_seen = s->ci_req.pushed();
    }
  }

  // The DMA engine and EQ engine downstream: usually take everything, sometimes stall a while.
  void consume(uint64_t c) {
    // ~0.2 % of cycles start a stall of 1..40 cycles (bits of this cycle's draw not used elsewhere).
    const uint64_t d = env_.last_draw();
    if (stall_until_ <= c && ((d >> 48) & 0x1FF) == 0 && ((d >> 57) & 1)) stall_until_ = c + 1 + (d >> 58) % 40;
    if (stall_until_ > c) return;
    for (Side* s : {model_.get(), rtl_.get()}) {
      if (!s) continue;
      if (!s->dma.empty()) s->dma.pop(c);
      if (!s->events.empty()) s->events.pop(c);
      if (!s->ci_req.empty()) s->ci_req.pop(c);
    }
  }

  CosimOptions opt_;
  Environment env_;
  std::unique_ptr<Side> model_, rtl_;
  std::multimap<uint64_t, CosimInput> script_;
  std::array<CosimInput, 8> recent_;  // the last inputs, for the mismatch report
  size_t recent_count_ = 0;
  uint64_t stall_until_ = 0;
  CosimReport report_;
};

}  // namespace

CosimReport run_cosim(const CosimOptions& opt) {
  CosimReport report = Lockstep(opt, 0, 0, "").run(UINT64_MAX);
  const bool traced = !opt.vcd.empty() || !opt.fst.empty();
  if (report.mismatches && traced && opt.mode == CosimMode::lockstep) {
    // Same seed, same run: repeat it up to the mismatch with the RTL traced around it. An FST
    // is the VCD converted (a temporary one when no VCD was asked for).
    const uint64_t m = report.first_mismatch_cycle;
    const std::string vcd = opt.vcd.empty() ? opt.fst + ".vcd" : opt.vcd;
    Lockstep(opt, m > opt.vcd_window ? m - opt.vcd_window : 0, m + 5, vcd).run(m + 5);
    if (!opt.vcd.empty()) report.vcd_written = opt.vcd;
    if (!opt.fst.empty()) {
      report.fst_error = vcd_to_fst(vcd, opt.fst);
      if (report.fst_error.empty()) report.fst_written = opt.fst;
    }
    if (opt.vcd.empty()) std::remove(vcd.c_str());
  }
  return report;
}

namespace directed {
namespace {

CosimInput create(uint64_t cycle, uint32_t cqn, uint8_t log_size, uint16_t count = 0, uint16_t period = 0,
                  PeriodMode mode = PeriodMode::eqe) {
  CosimInput in;
  in.kind = CosimInput::Kind::control;
  in.cycle = cycle;
  in.control.op = CqControl::Op::create;
  in.control.cqn = cqn;
  in.control.cfg = cq_config(cqn, log_size);
  in.control.cfg.mod_count = count;
  in.control.cfg.mod_period = period;
  in.control.cfg.period_mode = mode;
  return in;
}

CosimInput arm(uint64_t cycle, uint32_t cqn, uint8_t sn, ArmCmd cmd, uint32_t ci) {
  CosimInput in;
  in.kind = CosimInput::Kind::arm;
  in.cycle = cycle;
  in.arm = ArmRequest{cqn, sn, cmd, ci};
  return in;
}

CosimInput cpl(uint64_t cycle, uint32_t cqn, uint64_t wr_id, bool is_send = false, bool se = false,
               uint8_t syndrome = 0) {
  CosimInput in;
  in.kind = CosimInput::Kind::completion;
  in.cycle = cycle;
  in.completion.cqn = cqn;
  in.completion.is_send = is_send;
  in.completion.opcode = is_send ? cqe::kReq : cqe::kRespSend;
  in.completion.wr_id = wr_id;
  in.completion.se = se;
  in.completion.syndrome = syndrome;
  in.completion.byte_cnt = 64;
  return in;
}

}  // namespace

std::vector<CosimInput> notify_next() {
  return {create(1, 1, 4), arm(10, 1, 0, ArmCmd::next, 0), arm(11, 1, 0, ArmCmd::next, 0),  // second absorbed
          cpl(20, 1, 1), cpl(21, 1, 2),  // one event, then disarmed
          arm(40, 1, 1, ArmCmd::next, 2), cpl(50, 1, 3), arm(60, 1, 1, ArmCmd::next, 3)};  // stale sn
}

std::vector<CosimInput> notify_solicited() {
  return {create(1, 2, 4), arm(10, 2, 0, ArmCmd::solicited, 0), cpl(20, 2, 1), cpl(21, 2, 2, true),
          cpl(22, 2, 3, false, true),                                             // SE receive fires
          arm(40, 2, 1, ArmCmd::solicited, 3), cpl(45, 2, 4, true, false, 0x15),  // error fires
          arm(60, 2, 2, ArmCmd::solicited, 4), arm(61, 2, 2, ArmCmd::next, 4),    // NEXT upgrades
          cpl(70, 2, 5, true)};
}

std::vector<CosimInput> fire_at_arm() {
  return {create(1, 3, 4), cpl(10, 3, 1), cpl(11, 3, 2), arm(30, 3, 0, ArmCmd::next, 2),  // seen: no event
          arm(40, 3, 0, ArmCmd::next, 1),                                                 // absorbed (armed)
          cpl(50, 3, 3), arm(70, 3, 1, ArmCmd::next, 0),                                  // behind: at once
          cpl(80, 3, 4, false, true), arm(90, 3, 2, ArmCmd::solicited, 3)};               // solicited behind
}

std::vector<CosimInput> arm_moderated() {
  return {create(1, 7, 6, 4, 2, PeriodMode::eqe), arm(10, 7, 0, ArmCmd::next, 0), cpl(20, 7, 1),  // event by period
          cpl(1100, 7, 2), cpl(1101, 7, 3), arm(1200, 7, 1, ArmCmd::next, 1),                  // 2 owed: period's end
          cpl(2100, 7, 4), cpl(2101, 7, 5), cpl(2102, 7, 6), cpl(2103, 7, 7), cpl(2104, 7, 8),
          arm(2200, 7, 2, ArmCmd::next, 3),                                                     // 5 owed: count, at once
          create(1, 8, 6, 0, 2, PeriodMode::cqe), arm(10, 8, 0, ArmCmd::next, 0), cpl(20, 8, 1),
          cpl(1100, 8, 2), cpl(1400, 8, 3), arm(1500, 8, 1, ArmCmd::next, 1),                  // a period after 1400
          create(1, 9, 6, 4, 2, PeriodMode::eqe), cpl(20, 9, 1, false, true),
          arm(100, 9, 0, ArmCmd::solicited, 0)};                                                // solicited owed
}

std::vector<CosimInput> moderation() {
  std::vector<CosimInput> s = {create(1, 4, 6, 4, 0), arm(10, 4, 0, ArmCmd::next, 0)};
  for (int i = 0; i < 4; ++i) s.push_back(cpl(20 + uint64_t(i) * 3, 4, uint64_t(i)));     // by count
  s.push_back(create(2, 5, 6, 0, 2, PeriodMode::eqe));
  s.push_back(arm(10, 5, 0, ArmCmd::next, 0));
  s.push_back(cpl(2000, 5, 1));                                                           // period passed: at once
  s.push_back(arm(2100, 5, 1, ArmCmd::next, 1));
  s.push_back(cpl(2200, 5, 2));                                                           // waits for the period
  s.push_back(create(3, 6, 6, 0, 2, PeriodMode::cqe));
  s.push_back(arm(10, 6, 0, ArmCmd::next, 0));
  s.push_back(cpl(100, 6, 1));
  s.push_back(cpl(400, 6, 2));                                                            // restarts the timer
  CosimInput change;
  change.kind = CosimInput::Kind::control;
  change.cycle = 5000;
  change.control.op = CqControl::Op::modify_moderation;
  change.control.cqn = 4;
  change.control.cfg = cq_config(4, 6);
  change.control.cfg.mod_count = 2;
  s.push_back(arm(4000, 4, 1, ArmCmd::next, 4));
  for (int i = 0; i < 3; ++i) s.push_back(cpl(4100 + uint64_t(i), 4, 10 + uint64_t(i)));  // 3 pending < 4 ...
  s.push_back(change);                                                                    // ... >= 2: fires
  return s;
}

std::vector<CosimInput> overflow() {
  std::vector<CosimInput> s = {create(1, 7, 2)};
  for (int i = 0; i < 5; ++i) s.push_back(cpl(10 + uint64_t(i), 7, uint64_t(i)));
  CosimInput rsp;
  rsp.kind = CosimInput::Kind::ci_response;
  rsp.cycle = 100;
  rsp.ci = CiResponse{7, 0, true};  // nothing consumed: overflow
  s.push_back(rsp);
  s.push_back(create(200, 8, 2));
  for (int i = 0; i < 5; ++i) s.push_back(cpl(210 + uint64_t(i), 8, uint64_t(i)));
  rsp.cycle = 300;
  rsp.ci = CiResponse{8, 2, true};  // two consumed: the waiting CQE is written
  s.push_back(rsp);
  return s;
}

}  // namespace directed
}  // namespace vhca

// The host driver core: boots the HCA (reset, init segment checks, command interface, QUERY_CAP,
// INIT, MSI-X, async and completion EQs, interrupt handlers), executes commands, and dispatches
// events from EQs to CQs and to the async event handler. Calls run in SystemC threads on the
// modelled host CPU (the application's); the interrupt handlers run as kernel work on its cores.
// Verbs live in verbs.h, the kernel-style CQ abstraction in cq_pool.h.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <systemc>
#include <vector>

#include "firmware-shim/host_cpu.h"
#include "model/common/earliest_timer.h"
#include "model/cmd/commands.h"
#include "model/regs/tables.h"

namespace vhca {

class HostMemory;
struct Cq;
struct Qp;

struct DriverConfig {
  uint32_t num_comp_vectors = 2;  // completion EQs, one MSI-X vector each (vector 0 is async)
  uint8_t eq_log_size = 10;
  uint8_t async_eq_log_size = 6;
  uint32_t uar = 0;               // UAR page used for doorbells
  bool rq_doorbell_mmio = false;  // ring UAR_RQ_DB on post_recv (else the doorbell record only)
  // A post_send of one inline WR writes its WQE through UAR_SQ_BF (BlueFlame), as mlx5's provider
  // does, instead of ringing UAR_SQ_DB: the device takes the WQE without reading the ring.
  bool blueflame = false;
  sc_core::sc_time command_timeout{1, sc_core::SC_MS};
  sc_core::sc_time reset_timeout{1, sc_core::SC_MS};
};

struct CommandResult {
  uint8_t status = cmd::kInternalError;
  uint32_t syndrome = 0;
  std::array<uint32_t, cmdblk::kOutputDwords> out{};
  bool timed_out = false;
  bool ok() const { return !timed_out && status == cmd::kOk; }
  std::string message() const;
};

struct DeviceCaps {
  uint32_t log_max_cq = 0, log_max_cq_sz = 0, log_max_eq = 0, log_max_eq_sz = 0, num_msix = 0, num_uars = 0,
           flags = 0, core_clock_khz = 0, max_mod_count = 0, max_mod_period = 0;
};

struct AsyncEvent {
  uint8_t type = 0;  // eqe:: event type
  uint32_t cqn = 0;
  uint8_t syndrome = 0;
  uint64_t data = 0;
  Cq* cq = nullptr;  // for CQ errors: the CQ, if the driver knows it
};

class Driver {
 public:
  using Input = std::array<uint32_t, cmdblk::kInputDwords>;

  Driver(HostCpu& cpu, HostMemory& memory, const DriverConfig& cfg = {});

  CommandResult boot();
  CommandResult teardown();
  bool booted() const { return booted_; }
  CommandResult exec(uint16_t opcode, const Input& in = {});

  const DeviceCaps& caps() const { return caps_; }
  HostCpu& cpu() { return cpu_; }
  HostMemory& memory() { return memory_; }
  const DriverConfig& config() const { return cfg_; }
  uint32_t num_comp_vectors() const { return uint32_t(comp_eqs_.size()); }
  uint32_t eqn_for_vector(uint32_t comp_vector) const { return eqs_[comp_eqs_.at(comp_vector)].eqn; }
  // The host interrupt vector (MSI-X data) a completion vector's EQ raises.
  uint32_t host_vector_of(uint32_t comp_vector) const { return eqs_[comp_eqs_.at(comp_vector)].vector; }
  uint32_t async_host_vector() const { return eqs_.at(async_eq_).vector; }
  uint32_t async_eqn() const { return eqs_.at(async_eq_).eqn; }
  // Offset of a register by name (reads through the register table, never a literal).
  static uint64_t offset_of(const char* name, uint32_t index = 0);
  // The doorbells of this driver's UAR page, rung on every post, poll and re-arm: looked up in
  // the register table once, at construction.
  struct Doorbells {
    uint64_t eq_arm, cq_arm, sq, rq, sq_bf;
  };
  const Doorbells& doorbells() const { return doorbells_; }
  uint32_t read_register(const char* name, uint32_t index = 0);

  // CQ registry, for event dispatch.
  void attach(Cq* cq);
  void detach(Cq* cq);
  Cq* find_cq(uint32_t cqn) const;
  // QP registry: polling a CQE updates its QP's work-queue accounting.
  void attach(Qp* qp);
  void detach(Qp* qp);
  Qp* find_qp(uint32_t qpn) const;
  // Every verbs object the library hands out (CQ, QP, PD, MR, SRQ) is owned here until its
  // destroy verb frees it; what a program leaves behind goes with the driver, as the kernel frees
  // a process's objects when its verbs context closes.
  template <class T>
  T* own(std::unique_ptr<T> object) {
    T* raw = object.get();
    owned_.emplace(raw, Owned(object.release(), [](void* p) { delete static_cast<T*>(p); }));
    return raw;
  }
  void free_owned(const void* object) { owned_.erase(object); }
  size_t objects_owned() const { return owned_.size(); }

  std::function<void(const AsyncEvent&)> async_handler;
  const std::string& last_error() const { return last_error_; }
  // Advice the library gives without refusing (S15); each is also logged.
  void warn(std::string w) {
    log_warning(w);
    warnings_.push_back(std::move(w));
  }
  const std::vector<std::string>& warnings() const { return warnings_; }
  void set_last_error(std::string e) { last_error_ = std::move(e); }
  uint64_t eqes_handled() const { return eqes_handled_; }
  uint64_t eq_overruns_recovered() const { return eq_overruns_recovered_; }
  // Called for every completion event before the CQ's handler (measurement hook).
  Observers<Cq&, const uint8_t*> on_completion_event;  // (CQ, its completion EQE)

 private:
  struct Eq {
    uint32_t eqn = 0;
    uint32_t vector = 0;
    uint64_t base = 0;
    uint8_t log_size = 0;
    uint32_t ci = 0;
    std::array<uint8_t, eqe::kSize> taken{};  // the EQE the handler's next step dispatches
  };
  CommandResult fail_local(const std::string& what);
  CommandResult create_eq(uint32_t vector, uint8_t log_size, uint32_t mask, Eq& eq);
  void program_msix(uint32_t vector);
  void handle_eq(size_t index);
  void recover_eq_overrun(uint32_t eqn);
  void dispatch(const uint8_t* eqe);
  bool dispatch_quiet(const uint8_t* eqe) const;
  bool wait_ready();

  HostCpu& cpu_;
  HostMemory& memory_;
  DriverConfig cfg_;
  Doorbells doorbells_;
  DeviceCaps caps_;
  uint64_t cmd_block_ = 0;
  uint8_t token_ = 0;
  sc_core::sc_mutex cmd_lock_;
  sc_core::sc_event cmd_reply_;    // the device's reply is seen by a poll now
  sc_core::sc_time cmd_start_;     // the running command's doorbell: its polls count from here
  uint64_t cmd_polls_ = 0;         // its polls that found the block still owned by the device
  bool cmd_waiting_ = false;       // it sleeps until its reply or deadline
  void reply_landed();
  uint64_t poll_at_or_after(const sc_core::sc_time& t) const;
  sc_core::sc_time poll_time(uint64_t poll) const;
  uint64_t next_poll() const;
  EarliestTimer cmd_timeout_;      // a command's deadline: finished commands leave no cancelled timeout
  sc_core::sc_event_or_list cmd_wake_;  // the reply or the deadline: built once, not per command
  std::vector<Eq> eqs_;
  size_t async_eq_ = 0;
  std::vector<size_t> comp_eqs_;
  std::vector<Cq*> cqs_;  // by CQN (dense, from 1): found per EQE without a tree walk
  std::map<uint32_t, Qp*> qps_;
  // Objects of any type, each with its own deleter (no shared_ptr: its control block is an
  // allocation per object).
  using Owned = std::unique_ptr<void, void (*)(void*)>;
  std::unordered_map<const void*, Owned> owned_;
  bool booted_ = false;
  std::string last_error_;
  uint64_t eqes_handled_ = 0;
  uint64_t eq_overruns_recovered_ = 0;
  std::vector<std::string> warnings_;
  static void log_warning(const std::string& w);
};

}  // namespace vhca

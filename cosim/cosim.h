// Lockstep co-simulation of the CQ writer: the C++ model (CqWriterPipeline) and the Verilated RTL
// (rtl/cq_writer_pipelined.v, at 64, 4,096 or 65,536 CQs) receive the same stimulus every cycle and every output transaction — CQE write
// (address and 64 bytes), event, consumer-index request, bad doorbell, control done — is compared
// with its cycle. The first mismatch stops the run and is reported with cycle, stream, field,
// expected and actual values and the last inputs; with a VCD path the run is repeated with the
// RTL traced in a window around that cycle.
//
// Stimulus: a constrained-random host environment (CQ creation and destruction, arms with right,
// wrong and stale sequence numbers, completions of every kind, moderation changes in both modes,
// resizes, doorbell-record responses with random delay, access errors, output backpressure),
// reproducible from a seed, plus optional directed scripts.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/cq/cq_writer_engine.h"
#include "model/cq/cq_writer_pipeline.h"
#include "cosim/rtl_engine.h"

namespace vhca {

enum class CosimMode { lockstep, model_only, rtl_only };

// One stimulus item: pushed into the writer's input on `cycle` (visible one cycle later).
struct CosimInput {
  enum class Kind : uint8_t { control, arm, completion, ci_response, access_error } kind = Kind::completion;
  uint64_t cycle = 0;
  CqControl control;
  ArmRequest arm;
  CompletionRecord completion;
  CiResponse ci;
  uint32_t cqn = 0;
  std::string describe() const;
};

struct CosimOptions {
  CosimMode mode = CosimMode::lockstep;
  uint64_t cqes = 100000;        // stop once this many CQEs were written (random stimulus)
  uint64_t seed = 1;
  bool random = true;            // constrained-random stimulus (else the script alone)
  std::vector<CosimInput> script;  // directed inputs, applied on their cycles
  uint64_t max_cycles = 0;       // 0: no limit besides `cqes` (a script run ends after its last input + 20000)
  std::string vcd;               // write a waveform around the first mismatch
  std::string fst;               // the same window as FST (GTKWave's compressed format)
  uint64_t vcd_window = 200;     // cycles before the mismatch
  RtlFaults faults;              // deliberate RTL faults (checker self-test)
  uint32_t rtl_init_seed = 0;    // random initial register and RAM values from this seed
  uint32_t num_cqs = 64;         // one of rtl_pipelined_sizes()
  ArmEvent arm_event = ArmEvent::moderated;  // what an arm finding CQEs owed does (S26)
};

struct CosimReport {
  uint64_t cycles = 0;
  uint64_t cqes = 0;             // CQEs written
  uint64_t compared = 0;         // output transactions compared
  uint64_t contexts_compared = 0;  // CQ contexts compared (one a cycle, round robin)
  uint64_t mismatches = 0;
  uint64_t first_mismatch_cycle = 0;
  std::string first_mismatch;    // the full report of the first mismatch
  CqeWriterStats coverage;       // of the reference engine
  CqWriterPipeline::Coverage pipeline;  // the pipelined writer's own mechanisms (C++ model's count)
  std::vector<std::string> protocol_violations;  // the stream checker on the RTL's pins
  bool coverage_equal = true;    // model and RTL coverage counters agree (lockstep)
  uint64_t output_stall_cycles = 0;
  uint64_t quiet_cycles = 0;     // cycles on which both sides wanted no clock until later
  uint64_t arms_next = 0, arms_solicited = 0;  // arm kinds delivered to the writer
  double wall_seconds = 0;
  std::string vcd_written;
  std::string fst_written, fst_error;  // the FST written, or why it could not be
  std::string summary() const;
};

CosimReport run_cosim(const CosimOptions& opt);

// Directed scripts, one per rule the writer implements.
namespace directed {
std::vector<CosimInput> notify_next();        // S7, S10
std::vector<CosimInput> notify_solicited();   // S8, S11
std::vector<CosimInput> fire_at_arm();        // S9
std::vector<CosimInput> moderation();         // S12, both modes, run-time change
std::vector<CosimInput> arm_moderated();      // S26: CQEs owed at an arm wait for count or period
std::vector<CosimInput> overflow();           // S14, refresh and overflow
}  // namespace directed

}  // namespace vhca

// Waveforms in FST, GTKWave's compressed format, beside VCD: vhca writes its windows as VCD and
// converts them with GTKWave's own converter, vcd2fst (Debian package gtkwave; the bootstrap
// installs it), so an FST opens in GTKWave exactly as the VCD would, at a fraction of the size.
#pragma once
#include <string>

namespace vhca {

// Converts `vcd` to `fst`; "" on success, else why not (vcd2fst missing, or failing).
std::string vcd_to_fst(const std::string& vcd, const std::string& fst);
// "" when vcd2fst is on the PATH, else the message vcd_to_fst would give: asked before a run, so
// that an FST that cannot be made is refused before the run rather than after it.
std::string fst_converter_missing();

}  // namespace vhca

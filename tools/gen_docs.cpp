// Writes docs/registers.md, docs/formats.md and docs/commands.md from the tables the model uses,
// and rtl/vhca_formats.vh for the RTL. Run by the `docs` target; the test `docs_up_to_date`
// fails if a committed file differs from what this program writes.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "model/cmd/commands.h"
#include "model/regs/tables.h"

namespace {

std::string registers_md() {
  std::ostringstream o;
  o << "# BAR0 register map\n\n"
       "Generated from `model/regs/tables.cpp` by `vhca-gen-docs`; do not edit by hand.\n\n"
       "All registers are little-endian. An access must use the register's width exactly; an access to an "
       "offset with no register, with another width, a write to an RO register or a read of a WO register "
       "gets a TLM address-error response (a PCIe unsupported request), a log line, and is counted in "
       "`BAD_ACCESSES`.\n\n"
       "| offset | name | width | count x stride | reset | access | description |\n"
       "|---|---|---|---|---|---|---|\n";
  for (const auto& r : vhca::bar0_registers())
    o << fmt::format("| {:#07x} | {} | {} | {} | {:#x} | {} | {} |\n", r.offset, r.name, r.width * 8,
                     r.count > 1 ? fmt::format("{} x {:#x}", r.count, r.stride) : std::string("1"), r.reset,
                     vhca::access_name(r.access), r.description);
  return o.str();
}

// The RTL name of a code: kReqErr -> REQ_ERR, armed_next -> ARMED_NEXT.
std::string rtl_code_name(const char* cpp_name) {
  std::string in = cpp_name, out;
  if (in.size() > 1 && in[0] == 'k' && std::isupper(static_cast<unsigned char>(in[1]))) in.erase(0, 1);
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0 && in[i - 1] != '_') out += '_';
    out += c == '_' ? '_' : char(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string codes_vh() {
  std::ostringstream o;
  o << "// Generated from model/regs/codes.h by vhca-gen-docs; do not edit by hand.\n"
       "// The hardware contract's code values, included inside a module body.\n";
  for (const auto& l : vhca::code_lists()) {
    o << fmt::format("// {}\n", l.title);
    for (const auto& c : l.codes)
      o << fmt::format("localparam [{}:0] {}_{} = {}'h{:X};\n", l.rtl_width - 1, l.rtl_prefix, rtl_code_name(c.name),
                       l.rtl_width, c.value);
  }
  return o.str();
}

std::string formats_md() {
  std::ostringstream o;
  o << "# Hardware formats\n\n"
       "Generated from `model/regs/tables.h` by `vhca-gen-docs`; do not edit by hand. Byte offsets are from the "
       "start of the structure; a field is `width` bits at bit `lo` of the big-endian container of `size` bytes "
       "at `byte` (MMIO values: bits of the little-endian register value).\n\n";
  for (const auto& f : vhca::formats()) {
    o << fmt::format("## {} ({} bytes)\n\n| field | byte | size | bits | description |\n|---|---|---|---|---|\n",
                     f.name, f.size);
    for (const auto& s : f.fields)
      o << fmt::format("| {} | {:#04x} | {} | {}:{} | {} |\n", s.name, s.field.byte, s.field.size,
                       s.field.lo + s.field.width - 1, s.field.lo, s.description);
    o << "\n";
  }
  o << "# Code values\n\nGenerated from `model/regs/codes.h`, the one list the model, the driver and the RTL "
       "(`rtl/vhca_codes.vh`) take these values from.\n\n";
  for (const auto& l : vhca::code_lists()) {
    o << fmt::format("## {}\n\n| value | name | RTL localparam | meaning |\n|---|---|---|---|\n", l.title);
    for (const auto& c : l.codes)
      o << fmt::format("| {:#04x} | {} | {}_{} | {} |\n", c.value, c.name, l.rtl_prefix, rtl_code_name(c.name),
                       c.meaning);
    o << "\n";
  }
  return o.str();
}

std::string commands_md() {
  std::ostringstream o;
  o << "# Commands\n\n"
       "Generated from `model/cmd/commands.cpp` by `vhca-gen-docs`; do not edit by hand. Input dwords not "
       "listed must be zero. A refused command carries a status and a syndrome `(opcode << 16) | (dword << 8) | "
       "reason` naming the field (dword 0xFE: op_mod, 0xFF: no single field).\n\n## Status codes\n\n"
       "| status | name |\n|---|---|\n";
#define VHCA_STATUS_ROW(n, v, d) o << fmt::format("| {:#04x} | {} |\n", v, d);
  VHCA_CMD_STATUSES(VHCA_STATUS_ROW)
#undef VHCA_STATUS_ROW
  o << "\n## Reasons\n\n| reason | meaning |\n|---|---|\n";
#define VHCA_REASON_ROW(n, v, d) o << fmt::format("| {} | {} |\n", v, d);
  VHCA_CMD_REASONS(VHCA_REASON_ROW)
#undef VHCA_REASON_ROW
  for (const auto& c : vhca::cmd::commands()) {
    o << fmt::format("\n## {} ({:#x})\n\n{}\n\n", c.name, int(c.opcode), c.description);
    if (!c.inputs.empty()) {
      o << "| input | name | meaning |\n|---|---|---|\n";
      for (const auto& d : c.inputs) o << fmt::format("| in[{}] | {} | {} |\n", d.index, d.name, d.description);
      o << "\n";
    }
    if (!c.outputs.empty()) {
      o << "| output | name | meaning |\n|---|---|---|\n";
      for (const auto& d : c.outputs) o << fmt::format("| out[{}] | {} | {} |\n", d.index, d.name, d.description);
    }
  }
  return o.str();
}

std::string formats_vh() {
  std::ostringstream o;
  o << "// Generated from model/regs/tables.h by vhca-gen-docs; do not edit by hand.\n"
       "// For each field: <FORMAT>_<FIELD>_LO (bit index in the format's big-endian bit vector, bit 0 = last bit\n"
       "// of the last byte) and <FORMAT>_<FIELD>_W.\n";
  for (const auto& f : vhca::formats()) {
    const char* p = f.prefix;
    for (const auto& s : f.fields) {
      // Bit position of the field's lsb, counting from the end of the structure.
      unsigned container_end_bit = (f.size - (s.field.byte + s.field.size)) * 8;
      std::string name = s.name;
      for (auto& ch : name) ch = char(std::toupper(ch));
      o << fmt::format("`define {}_{}_LO {}\n`define {}_{}_W {}\n", p, name, container_end_bit + s.field.lo, p, name,
                       s.field.width);
    }
  }
  return o.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: vhca-gen-docs <repo-root> [--check]\n";
    return 2;
  }
  const std::string root = argv[1];
  const bool check = argc > 2 && std::string(argv[2]) == "--check";
  const std::pair<std::string, std::string> files[] = {{"docs/registers.md", registers_md()},
                                                       {"docs/formats.md", formats_md()},
                                                       {"docs/commands.md", commands_md()},
                                                       {"rtl/vhca_formats.vh", formats_vh()},
                                                       {"rtl/vhca_codes.vh", codes_vh()}};
  int stale = 0;
  for (const auto& [path, text] : files) {
    if (check) {
      std::ifstream in(root + "/" + path);
      std::stringstream have;
      have << in.rdbuf();
      if (have.str() != text) {
        std::cerr << path << " differs from the tables: run `vhca-gen-docs " << root << "`\n";
        ++stale;
      }
    } else {
      std::ofstream(root + "/" + path) << text;
    }
  }
  return stale ? 1 : 0;
}

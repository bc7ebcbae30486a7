// The fuzz targets without libFuzzer (g++ builds, CI): runs every file of the corpus folders
// given, then `--mutations N` inputs made from them by a seeded byte mutator (flips, inserts,
// deletions, splices), through LLVMFuzzerTestOneInput. A finding is a crash or a sanitizer report,
// as under libFuzzer; the run prints how many inputs it ran. Usage:
//   fuzz_X_replay [--mutations N] [--seed S] DIR_OR_FILE...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {
std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  const int edits = 1 + int(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0: if (!s.empty() && at < s.size()) s[at] = char(s[at] ^ (1u << (rng() % 8))); break;
      case 1: s.insert(at, 1, char(rng() % 256)); break;
      case 2: if (at < s.size()) s.erase(at, 1 + rng() % 8); break;
      case 3: {  // a run of one "interesting" text
        static const char* const kBits[] = {"nan", "inf", "-1", "1e400", "18446744073709551616", "0x", ": ", "\n",
                                            "{", "[", "'", "\"", "us", "KiB", "GiB", "=", ",", "#", "\t", "~"};
        s.insert(at, kBits[rng() % (sizeof kBits / sizeof kBits[0])]);
        break;
      }
      default: {  // a piece of another corpus entry
        const std::string& o = corpus[rng() % corpus.size()];
        if (!o.empty()) {
          const size_t from = rng() % o.size();
          s.insert(at, o.substr(from, 1 + rng() % 64));
        }
      }
    }
  }
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  uint64_t mutations = 0, seed = 1;
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) mutations = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (std::filesystem::is_directory(a)) {
      for (const auto& f : std::filesystem::directory_iterator(a))
        if (f.is_regular_file()) corpus.push_back(read_file(f.path()));
    } else {
      corpus.push_back(read_file(a));
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] DIR_OR_FILE...: no input found\n", argv[0]);
    return 2;
  }
  for (const std::string& s : corpus) LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  std::mt19937_64 rng(seed);
  for (uint64_t n = 0; n < mutations; ++n) {
    const std::string s = mutate(corpus[rng() % corpus.size()], corpus, rng);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  std::printf("ran %zu corpus inputs and %llu mutations: no finding\n", corpus.size(),
              static_cast<unsigned long long>(mutations));
  return 0;
}

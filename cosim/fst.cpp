#include "cosim/fst.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

namespace vhca {

namespace {
const char* const kMissing = "vcd2fst not found: install the Debian package gtkwave (tools/bootstrap.sh does)";
}  // namespace

std::string fst_converter_missing() {
  const char* path = std::getenv("PATH");
  for (std::string dirs = path ? path : ""; !dirs.empty();) {
    const size_t colon = dirs.find(':');
    const std::string dir = dirs.substr(0, colon);
    if (!dir.empty() && access((dir + "/vcd2fst").c_str(), X_OK) == 0) return "";
    dirs = colon == std::string::npos ? "" : dirs.substr(colon + 1);
  }
  return kMissing;
}

std::string vcd_to_fst(const std::string& vcd, const std::string& fst) {
  std::vector<std::string> args{"vcd2fst", "-v", vcd, "-f", fst};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);  // its progress lines
  const int rc = posix_spawnp(&pid, "vcd2fst", &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (rc == ENOENT) return kMissing;
  if (rc != 0) return std::string("cannot run vcd2fst: ") + std::strerror(rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "vcd2fst failed converting " + vcd + " to " + fst;
  return "";
}

}  // namespace vhca

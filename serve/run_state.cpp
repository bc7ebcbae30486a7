#include "serve/run_state.h"

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace vhca::run_state {

long voluntary_switches(pid_t pid, pid_t tid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status";
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return -1;
  char line[256];
  long n = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1) break;
  std::fclose(f);
  return n;
}

namespace {
// The state letter of /proc/PID/task/TID/stat (after the command's closing parenthesis), or 0.
char thread_state(const std::string& stat_path) {
  std::FILE* f = std::fopen(stat_path.c_str(), "re");
  if (!f) return 0;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close && close[1] == ' ' ? close[2] : 0;
}
}  // namespace

bool any_thread_running(pid_t pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(task.c_str());
  if (!dir) return false;
  bool running = false;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const char s = thread_state(task + "/" + e->d_name + "/stat");
    if (s == 'R' || s == 'D') {
      running = true;
      break;
    }
  }
  ::closedir(dir);
  return running;
}

}  // namespace vhca::run_state

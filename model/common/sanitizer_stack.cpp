#include "model/common/sanitizer_stack.h"

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>

namespace vhca {

void restore_main_stack_bounds() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* base = nullptr;
  size_t size = 0;
  const bool known = pthread_attr_getstack(&attr, &base, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!known) return;
  // A "switch" from the main stack to itself, this time with its bounds.
  __sanitizer_start_switch_fiber(nullptr, base, size);
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
}

}  // namespace vhca
#else
namespace vhca {
void restore_main_stack_bounds() {}
}  // namespace vhca
#endif

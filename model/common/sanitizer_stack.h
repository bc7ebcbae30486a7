// The main thread's stack, as AddressSanitizer knows it, after SystemC's coroutines have run.
//
// Debian's SystemC 2.3.4 tells ASan of every switch between its coroutine stacks (the weak
// __sanitizer_*_switch_fiber hooks), but names the main stack with a base and size of 0 when it
// switches back to it. ASan then holds bounds of {0, 0} for the main thread and ignores the
// unpoisoning of the stack an exception needs: the next throw on the main stack reads its own
// stale redzones as a stack-buffer-overflow. Calling this once control is back on the main stack
// (after sc_start returns) gives ASan the real bounds again. Without ASan it does nothing.
#pragma once

namespace vhca {

void restore_main_stack_bounds();

}  // namespace vhca

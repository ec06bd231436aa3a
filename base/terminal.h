// Text printed for a person at a terminal, from what any process chose
// (task names, string fields, kernel-log lines). Pure.
#pragma once

#include <string>
#include <string_view>

namespace pp {

// Appends `text` fit for a terminal: each byte a terminal would act on
// rather than show (C0 controls but the tab, DEL, and the C1 controls
// U+0080..U+009F as UTF-8, 0xc2 0x80..0x9f) as "\xNN"; the rest as it is.
// A task named "\e]0;PWN\a" then shows as "\x1b]0;PWN\x07" and cannot
// set the window title. For text printed for a reader, never for JSON.
void append_terminal_safe(std::string& out, std::string_view text);
// Whether `text` has nothing append_terminal_safe() would escape (the common
// case, checked without allocating).
bool is_terminal_safe(std::string_view text);
std::string terminal_safe(std::string_view text);

}  // namespace pp

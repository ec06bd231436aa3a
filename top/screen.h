// top's terminal screen: ncurses for the display, readline for the prompts
// (sort keys, filter, event; one history), keys read without blocking so
// the session's loop keeps draining while the user types. The terminal is
// given back as it was when the screen closes: at `q`, on SIGINT and
// SIGTERM (the session takes them through a signalfd and returns), and on
// an error.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "top/model.h"

namespace pp::top {

class Screen {
 public:
  // On the terminal of standard input and output; EINVAL (usage) when
  // either is not a terminal.
  static Result<std::unique_ptr<Screen>> open();
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // The fd to poll for keys.
  int input_fd() const;

  // The keys typed: at most one command key (the next may open a prompt
  // that takes the keys after it), or kResize when the terminal changed
  // size; empty when nothing is left. While a prompt is open its keys go to
  // it and none is returned.
  static constexpr int kResize = -2;
  std::vector<int> keys();

  // Draws a frame: `title` in reverse on the first line, `lines` below
  // (cut to the screen), `status` on the last line.
  void draw(const std::string& title, const std::vector<top::TopLine>& lines,
            const std::string& status);

  // Opens a prompt on the last line; `done` gets the line (nullopt when
  // cancelled with an empty line or end of input) when Enter is typed.
  void prompt(const std::string& text, std::function<void(std::optional<std::string>)> done);
  bool prompting() const;

  size_t width() const;
  size_t height() const;

  struct State;  // the terminal's (readline's prompt callback reaches it)

 private:
  Screen() = default;
  std::unique_ptr<State> state_;
};

}  // namespace pp::top

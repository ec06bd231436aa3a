#include "top/screen.h"

#include <curses.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <readline/history.h>
#include <readline/readline.h>

namespace pp::top {

struct Screen::State {
  bool curses = false;
  bool prompting = false;
  bool colors = false;
  std::function<void(std::optional<std::string>)> done;
};

namespace {

// readline's callback has no context: the one open screen's state.
Screen::State* g_prompt_state = nullptr;

void line_typed(char* line) {
  Screen::State* state = g_prompt_state;
  std::optional<std::string> text;
  if (line && *line) {
    add_history(line);
    text = std::string(line);
  }
  std::free(line);
  // readline gives the terminal back in curses' modes.
  rl_callback_handler_remove();
  state->prompting = false;
  // Repaint all of it: readline wrote over the last line (and its newline
  // may have scrolled the screen).
  curs_set(0);
  clearok(curscr, TRUE);
  refresh();
  auto done = std::move(state->done);
  state->done = nullptr;
  if (done)
    done(std::move(text));
}

// readline reads the terminal's echo flag as "show what is typed" (off for a
// password); curses turned it off, so the prompt says it is on.
void prep_terminal(int meta) {
  rl_prep_terminal(meta);
  rl_tty_set_echoing(1);
}

enum Pair : short { kHighlight = 1, kTitle = 2 };

}  // namespace

Result<std::unique_ptr<Screen>> Screen::open() {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO))
    return usage_error(
        "top's screen needs a terminal on standard input and output; use --stdio for text or "
        "--json for one JSON object per refresh");
  std::unique_ptr<Screen> screen(new Screen());
  screen->state_ = std::make_unique<State>();
  if (!newterm(nullptr, stdout, stdin))
    return errorf(ErrorKind::kCommand, ENOTTY,
                  "cannot start the screen on terminal '%s'; set TERM to a terminal type this "
                  "host knows, or use --stdio",
                  std::getenv("TERM") ? std::getenv("TERM") : "(TERM unset)");
  screen->state_->curses = true;
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  curs_set(0);
  if (has_colors()) {
    start_color();
    use_default_colors();
    init_pair(kHighlight, COLOR_RED, -1);
    init_pair(kTitle, COLOR_BLACK, COLOR_CYAN);
    screen->state_->colors = true;
  }
  // readline must not take signals or the window size from ncurses.
  rl_catch_signals = 0;
  rl_catch_sigwinch = 0;
  rl_prep_term_function = prep_terminal;
  return screen;
}

Screen::~Screen() {
  if (!state_)
    return;
  if (state_->prompting) {
    rl_callback_handler_remove();
    g_prompt_state = nullptr;
  }
  if (state_->curses) {
    curs_set(1);
    endwin();
  }
}

int Screen::input_fd() const {
  return STDIN_FILENO;
}

size_t Screen::width() const {
  return size_t(COLS > 0 ? COLS : 80);
}

size_t Screen::height() const {
  return size_t(LINES > 0 ? LINES : 24);
}

bool Screen::prompting() const {
  return state_->prompting;
}

std::vector<int> Screen::keys() {
  std::vector<int> keys;
  if (state_->prompting) {
    rl_callback_read_char();
    return keys;
  }
  for (;;) {
    int c = getch();
    if (c == ERR)
      break;
    if (c == KEY_RESIZE) {
      // The terminal may have cleared or moved what it showed: the next
      // frame is drawn whole, not as changes to the last one.
      clearok(curscr, TRUE);
      c = kResize;
    }
    keys.push_back(c);
    if (state_->prompting)
      break;
  }
  return keys;
}

void Screen::draw(const std::string& title, const std::vector<report::TopLine>& lines,
                  const std::string& status) {
  if (state_->prompting)
    return;
  erase();
  int cols = COLS, rows = LINES;
  attr_t title_attr = state_->colors ? COLOR_PAIR(kTitle) : A_REVERSE;
  attron(title_attr);
  mvaddnstr(0, 0, title.c_str(), cols);
  for (int x = int(title.size()); x < cols; ++x)
    addch(' ');
  attroff(title_attr);
  int y = 1;
  for (const report::TopLine& l : lines) {
    if (y >= rows - 1)
      break;
    attr_t a = A_NORMAL;
    if (l.heading)
      a |= A_BOLD;
    if (l.highlight)
      a |= state_->colors ? COLOR_PAIR(kHighlight) | A_BOLD : A_STANDOUT;
    attron(a);
    mvaddnstr(y++, 0, l.text.c_str(), cols);
    attroff(a);
  }
  mvaddnstr(rows - 1, 0, status.c_str(), cols);
  refresh();
}

void Screen::prompt(const std::string& text, std::function<void(std::optional<std::string>)> done) {
  state_->done = std::move(done);
  state_->prompting = true;
  g_prompt_state = state_.get();
  // The prompt on the screen's last line, the frame above it kept: curses
  // stays (leaving it would switch a terminal with an alternate screen back
  // to the shell's, where the prompt would show and stay after top ends);
  // readline takes the terminal's modes while it reads and gives curses'
  // back when the line is done.
  move(LINES - 1, 0);
  clrtoeol();
  curs_set(1);
  refresh();
  rl_callback_handler_install(text.c_str(), line_typed);
}

}  // namespace pp::top

#include "top/screen.h"

#include <curses.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <readline/history.h>
#include <readline/readline.h>

namespace pp::top {

struct Screen::State {
  bool curses = false;
  bool prompting = false;
  bool colors = false;
  std::function<void(std::optional<std::string>)> done;
  int pending = -1;  // the key readline reads next
};

namespace {

// readline's hooks have no context: the one open screen's state.
Screen::State* g_prompt_state = nullptr;

// readline reads its keys from the screen, one at a time, and draws its
// line on the screen's last line: it never touches the terminal itself.
int next_key(FILE*) {
  int c = g_prompt_state ? g_prompt_state->pending : -1;
  if (g_prompt_state)
    g_prompt_state->pending = -1;
  return c < 0 ? EOF : c;
}

int key_waiting() {
  return g_prompt_state && g_prompt_state->pending >= 0;
}

void draw_prompt_line() {
  std::string line = std::string(rl_display_prompt ? rl_display_prompt : "") +
                     (rl_line_buffer ? rl_line_buffer : "");
  int cols = COLS;
  int cursor = int(std::strlen(rl_display_prompt ? rl_display_prompt : "")) + rl_point;
  // Keep the cursor on the screen when the line is longer than it.
  int first = cursor >= cols ? cursor - cols + 1 : 0;
  move(LINES - 1, 0);
  clrtoeol();
  if (first < int(line.size()))
    addnstr(line.c_str() + first, cols);
  move(LINES - 1, cursor - first);
  refresh();
}

void no_terminal_change(int) {}
void no_terminal_restore() {}

void line_typed(char* line) {
  Screen::State* state = g_prompt_state;
  std::optional<std::string> text;
  if (line && *line) {
    add_history(line);
    text = std::string(line);
  }
  std::free(line);
  rl_callback_handler_remove();
  state->prompting = false;
  keypad(stdscr, TRUE);
  curs_set(0);
  auto done = std::move(state->done);
  state->done = nullptr;
  if (done)
    done(std::move(text));
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
    return errorf(ErrorKind::kUsage, ENOTTY,
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
  // readline must not take signals, the window size or the terminal's
  // modes from ncurses: it edits a line the screen draws.
  rl_catch_signals = 0;
  rl_catch_sigwinch = 0;
  rl_change_environment = 0;
  rl_prep_term_function = no_terminal_change;
  rl_deprep_term_function = no_terminal_restore;
  rl_getc_function = next_key;
  rl_input_available_hook = key_waiting;
  rl_redisplay_function = draw_prompt_line;
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
  for (;;) {
    int c = getch();
    if (c == ERR)
      break;
    if (c == KEY_RESIZE) {
      // The next draw repaints every cell at the new size.
      clearok(curscr, TRUE);
      keys.push_back(kResize);
      continue;
    }
    if (state_->prompting) {
      state_->pending = c;
      rl_callback_read_char();
      continue;
    }
    // One command key at a time: the next may open a prompt that takes
    // the keys after it.
    keys.push_back(c);
    break;
  }
  return keys;
}

void Screen::draw(const std::string& title, const std::vector<top::TopLine>& lines,
                  const std::string& status) {
  erase();
  int cols = COLS, rows = LINES;
  attr_t title_attr = state_->colors ? COLOR_PAIR(kTitle) : A_REVERSE;
  attron(title_attr);
  mvaddnstr(0, 0, title.c_str(), cols);
  for (int x = int(title.size()); x < cols; ++x)
    addch(' ');
  attroff(title_attr);
  int y = 1;
  for (const top::TopLine& l : lines) {
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
  if (state_->prompting)
    draw_prompt_line();
  else
    mvaddnstr(rows - 1, 0, status.c_str(), cols);
  refresh();
}

void Screen::prompt(const std::string& text, std::function<void(std::optional<std::string>)> done) {
  state_->done = std::move(done);
  state_->prompting = true;
  g_prompt_state = state_.get();
  // The keys' escape sequences go to readline as they are (arrows walk the
  // history), not as ncurses' key codes.
  keypad(stdscr, FALSE);
  curs_set(1);
  rl_callback_handler_install(text.c_str(), line_typed);
}

}  // namespace pp::top

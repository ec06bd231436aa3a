// libFuzzer target: any bytes as ftrace ring-buffer pages (trace_pipe_raw),
// under the layout of Linux 6.18's events/header_page and header_event; the
// first byte picks the CPU and whether to try the 4-byte-commit layout. The
// reader must refuse a malformed page, never crash or read outside it, and
// every record it returns must lie inside the input. Seeds:
// tests/fuzz/corpus/ring_page_fuzzer/ (pages of real kernels and built ones).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ftrace/ring_page.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr char kHeaderEvent[] =
    "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
// A 4 KiB page with an 8-byte commit (x86-64) and a 256-byte one with a
// 4-byte commit, so that short inputs hold several pages.
constexpr char kPage64[] =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
constexpr char kPageSmall[] =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield: char data;\toffset:12;\tsize:244;\tsigned:0;\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp::ftrace;
  if (size < 1)
    return 0;
  static const RingLayout large_pages = *parse_ring_layout(kPage64, kHeaderEvent);
  static const RingLayout small_pages = *parse_ring_layout(kPageSmall, kHeaderEvent);
  const RingLayout& layout = (data[0] & 1) ? small_pages : large_pages;
  std::span<const uint8_t> pages(data + 1, size - 1);
  pages = pages.first(pages.size() / layout.page_size() * layout.page_size());
  RingRead read;
  (void)read_ring_pages(pages, layout, data[0] >> 1, read);
  for (const RingRecord& r : read.records)
    if (r.payload.data() < pages.data() ||
        r.payload.data() + r.payload.size() > pages.data() + pages.size() || r.payload.size() < 2)
      std::abort();
  // The header files themselves, from the same bytes.
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_ring_layout(text, kHeaderEvent);
  (void)parse_ring_layout(kPage64, text);
  return 0;
}

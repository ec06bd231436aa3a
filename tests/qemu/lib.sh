# shellcheck shell=sh
# tests/qemu/lib.sh: what the QEMU tests share (sourced, POSIX sh).
#
# Before sourcing, a test sets nothing; after, it has:
#   root        the repository root (the current directory from then on)
#   work        the work directory, absolute ($QEMU_WORK, default build/qemu)
#   start_time  when the test started (date +%s); elapsed() counts from it
#   qemu_pid    the pid of the QEMU it started (set it), killed on exit
#   monitor     the QEMU monitor's Unix socket path (set it), removed on exit
#   console     the guest console's log (set it), named on failure
# and the functions:
#   fail MSG...          FAIL line, the console log, the time taken; exit 1.
#                        A test may set fail_hook to the name of a function
#                        that prints more (it runs first, once).
#   elapsed              seconds since start_time
#   installed PKG        whether the Debian package is installed
#   need_tools CMD:PKG...  apt-get installs PKG for each CMD not on PATH (or
#                        each PKG not installed, when CMD is "-")
#   fetch_kernel         Debian's 6.1 kernel, downloaded once into $work/deb
#                        and unpacked into $work/kernel-VERSION; sets
#                        kernel_version, kernel_dir, kernel (the vmlinuz) and
#                        kernel_modules (its lib/modules/VERSION/kernel)
#   monitor_cmd CMD      sends CMD to the QEMU monitor; fails on an error reply
#
# Environment: QEMU_WORK (build/qemu), MCE_KERNEL (6.1.0-57-amd64; the
# newest linux-image-6.1*-amd64 left on the mirror when it is gone).

start_time=$(date +%s)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

work=${QEMU_WORK:-build/qemu}
mkdir -p "$work"
work=$(cd "$work" && pwd)
console=
monitor=
qemu_pid=
fail_hook=
apt_updated=no

elapsed() {
  echo "$(($(date +%s) - start_time))"
}

fail() {
  if [ -n "$fail_hook" ]; then
    hook=$fail_hook
    fail_hook=
    "$hook" >&2 || true
  fi
  echo "FAIL: $*" >&2
  [ -n "$console" ] && [ -f "$console" ] && echo "  console log: $console" >&2
  echo "  run took $(elapsed) s" >&2
  exit 1
}

qemu_cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
    kill "$qemu_pid" 2>/dev/null || true
    sleep 1
    kill -9 "$qemu_pid" 2>/dev/null || true
  fi
  [ -z "$monitor" ] || rm -f "$monitor"
}
trap qemu_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

installed() {
  dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

apt_update() {
  [ "$apt_updated" = yes ] && return 0
  apt-get update -qq || fail "apt-get update failed"
  apt_updated=yes
}

need_tools() {
  need=
  for pair in "$@"; do
    cmd=${pair%%:*}
    pkg=${pair#*:}
    if [ "$cmd" = - ]; then
      installed "$pkg" || need="$need $pkg"
    else
      command -v "$cmd" >/dev/null || need="$need $pkg"
    fi
  done
  [ -n "$need" ] || return 0
  echo "installing:$need"
  apt_update
  # shellcheck disable=SC2086  # $need is a word list
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >"$work/apt.log" 2>&1 ||
    fail "apt-get install$need failed: see $work/apt.log"
}

# The cached package of linux-image-$1, if any.
cached_kernel_deb() {
  for f in "$work"/deb/linux-image-"$1"_*.deb; do
    [ -f "$f" ] && echo "$f" && return 0
  done
  return 0
}

fetch_kernel() {
  kernel_version=${MCE_KERNEL:-6.1.0-57-amd64}
  mkdir -p "$work/deb"
  kernel_deb=$(cached_kernel_deb "$kernel_version")
  if [ -z "$kernel_deb" ]; then
    (cd "$work/deb" && apt-get download "linux-image-$kernel_version" >"$work/download.log" 2>&1) ||
      {
        apt_update
        (cd "$work/deb" && apt-get download "linux-image-$kernel_version" >"$work/download.log" 2>&1) || {
          # That exact version left the mirror: the newest plain 6.1 image.
          newest=$(apt-cache pkgnames linux-image-6.1 |
            grep -E '^linux-image-6\.1\.[0-9]+-[0-9]+-amd64$' | sort -V | tail -n 1)
          [ -n "$newest" ] || fail "no linux-image-6.1*-amd64 on the mirror (see $work/download.log)"
          kernel_version=${newest#linux-image-}
          echo "note: linux-image-${MCE_KERNEL:-6.1.0-57-amd64} is gone from the mirror; using $newest"
          [ -n "$(cached_kernel_deb "$kernel_version")" ] ||
            (cd "$work/deb" && apt-get download "$newest" >"$work/download.log" 2>&1) ||
            fail "apt-get download $newest failed: see $work/download.log"
        }
      }
    kernel_deb=$(cached_kernel_deb "$kernel_version")
    [ -n "$kernel_deb" ] || fail "apt-get download left no linux-image-${kernel_version}_*.deb in $work/deb"
  fi
  kernel_dir="$work/kernel-$kernel_version"
  kernel="$kernel_dir/boot/vmlinuz-$kernel_version"
  if [ ! -f "$kernel" ]; then
    rm -rf "$kernel_dir"
    dpkg-deb -x "$kernel_deb" "$kernel_dir" || fail "dpkg-deb -x $kernel_deb failed"
    [ -f "$kernel" ] || fail "$kernel_deb holds no boot/vmlinuz-$kernel_version"
  fi
  # shellcheck disable=SC2034  # for the tests that source this file
  kernel_modules="$kernel_dir/lib/modules/$kernel_version/kernel"
  echo "kernel: $kernel"
}

monitor_cmd() {
  reply=$(printf '%s\n' "$1" | socat -t 2 - "UNIX-CONNECT:$monitor" 2>&1) ||
    fail "cannot send '$1' to the QEMU monitor at $monitor: $reply"
  # The monitor echoes the command and prints nothing else on success.
  if printf '%s\n' "$reply" | grep -qi -e 'error' -e 'invalid' -e 'unknown' -e 'usage'; then
    fail "monitor answered '$1' with: $reply"
  fi
}

# Used by tests/qemu/pstore-test (mce-test and systemd-test predate them):
#   copy_program ROOTFS BINARY NAME  BINARY as ROOTFS/bin/NAME, with every
#                        shared library ldd names and the dynamic loader
#   receive_tar SERIAL SIZE MD5 DIR  the tar the guest wrote to a raw serial
#                        port (a "<TAG> SIZE" header line, then SIZE bytes),
#                        checked against the MD5 the guest printed, unpacked
#                        into DIR (emptied first); fails on any mismatch

copy_program() {
  mkdir -p "$1/bin"
  cp "$2" "$1/bin/$3" || fail "cannot copy $2 into $1/bin"
  for lib in $(ldd "$2" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
    mkdir -p "$1$(dirname "$lib")"
    cp -L "$lib" "$1$lib" || fail "cannot copy $lib (a library of $2) into $1"
  done
}

receive_tar() {
  [ -f "$1" ] || fail "the guest wrote nothing to its second serial port ($1)"
  rt_header=$(head -n 1 "$1")
  case $rt_header in
  *" $2") ;;
  *) fail "$1 starts with '$rt_header', not a header for $2 bytes" ;;
  esac
  rt_copy="$4.tar"
  tail -c +$((${#rt_header} + 2)) "$1" | head -c "$2" >"$rt_copy"
  rt_md5=$(md5sum <"$rt_copy" | cut -d' ' -f1)
  [ "$rt_md5" = "$3" ] ||
    fail "the copy $rt_copy ($(wc -c <"$rt_copy") bytes, md5 $rt_md5) differs from the guest's ($2 bytes, md5 $3)"
  rm -rf "$4"
  mkdir -p "$4"
  tar xf "$rt_copy" -C "$4" || fail "cannot unpack $rt_copy"
}

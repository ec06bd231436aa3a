# shellcheck shell=sh
# tests/qemu/lib.sh: what the QEMU tests share (sourced, POSIX sh).
#
# Before sourcing, a test sets nothing; after, it has:
#   root        the repository root (the current directory from then on)
#   work        the work directory, absolute ($QEMU_WORK, default build/qemu):
#               a run's files, each test's named apart (console logs,
#               monitor sockets, initramfs), so tests can run side by side
#   cache       what the guests boot, kept outside the tree so that a clean
#               clone finds it ($QEMU_CACHE, default
#               /var/cache/perf-persistent/qemu): the kernel package and its
#               unpacked tree, keyed by the package's version, and
#               systemd-test's root file system image
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
#   fetch_kernel [SERIES]  Debian's kernel package, downloaded into
#                        $cache/deb and unpacked into $cache/kernel/ once per
#                        package version: again when apt's candidate version
#                        (the host's package lists) differs from the cached
#                        one; sets kernel_version, kernel_deb, kernel_dir,
#                        kernel (the vmlinuz) and kernel_modules (its
#                        lib/modules/VERSION/kernel). SERIES 6.1 (the
#                        default: linux-image-$MCE_KERNEL) or 6.12 (the
#                        newest linux-image-6.12.*+deb12-amd64-unsigned apt
#                        knows, or $KERNEL_612 when set: boot-mapped trace
#                        instances)
#   cache_lock, cache_unlock  hold the cache's lock ($cache/lock) while
#                        filling it, so tests run side by side download and
#                        build once
#   monitor_cmd CMD      sends CMD to the QEMU monitor; fails on an error reply
#
# Environment: QEMU_WORK (build/qemu), QEMU_CACHE
# (/var/cache/perf-persistent/qemu), MCE_KERNEL (6.1.0-57-amd64; the
# newest linux-image-6.1*-amd64 left on the mirror when it is gone).

start_time=$(date +%s)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

work=${QEMU_WORK:-build/qemu}
mkdir -p "$work"
work=$(cd "$work" && pwd)
cache=${QEMU_CACHE:-/var/cache/perf-persistent/qemu}
test_name=$(basename "$0")
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
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >"$work/$test_name-apt.log" 2>&1 ||
    fail "apt-get install$need failed: see $work/$test_name-apt.log"
}

cache_lock() {
  mkdir -p "$cache" || fail "cannot create the cache directory $cache (QEMU_CACHE)"
  exec 9>"$cache/lock"
  if ! flock -n 9; then
    echo "waiting for the cache's lock ($cache/lock: another test fills the cache)"
    flock -w 1800 9 || fail "$cache/lock still held after 30 minutes"
  fi
}

cache_unlock() {
  exec 9>&-
}

# The cached package $1 (linux-image-VERSION[-unsigned]), if any.
cached_kernel_deb() {
  for f in "$cache"/deb/"$1"_*.deb; do
    [ -f "$f" ] && echo "$f" && return 0
  done
  return 0
}

# Downloads package $1 into $cache/deb (through a scratch directory, so an
# interrupted download leaves nothing that looks cached) and removes the
# other versions of it there.
download_deb() {
  rm -rf "$cache/download"
  mkdir -p "$cache/download" "$cache/deb"
  (cd "$cache/download" && apt-get download "$1" >"$cache/download.log" 2>&1) || return 1
  for f in "$cache/download/$1"_*.deb; do
    [ -f "$f" ] || return 1
    rm -f "$cache/deb/$1"_*.deb
    mv "$f" "$cache/deb/"
  done
  rm -rf "$cache/download"
}

# The version apt would download for package $1, from the host's package
# lists (no network); empty when apt does not know it.
candidate_version() {
  v=$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | head -n 1)
  [ "$v" = "(none)" ] || echo "$v"
}

# The newest kernel version of series $1 apt knows (from its package
# lists), with the package name's suffix $2: 6.1 -> 6.1.0-N-amd64, 6.12 ->
# 6.12.N+deb12-amd64.
newest_kernel() {
  case $1 in
  6.1) re='^linux-image-6\.1\.[0-9]+-[0-9]+-amd64' ;;
  *) re="^linux-image-$(echo "$1" | sed 's/\./\\./g')\\.[0-9]+\\+deb12-amd64" ;;
  esac
  apt-cache pkgnames "linux-image-$1" | grep -E "$re$2\$" | sed "s/$2\$//" | sort -V | tail -n 1 |
    sed 's/^linux-image-//'
}

fetch_kernel() {
  series=${1:-6.1}
  if [ "$series" = 6.1 ]; then
    kernel_version=${MCE_KERNEL:-6.1.0-57-amd64}
    package_suffix=
  else
    # The -unsigned package: the same vmlinuz and modules, no signed-image
    # dependency chain.
    package_suffix=-unsigned
    kernel_version=${KERNEL_612:-$(newest_kernel "$series" "$package_suffix")}
    if [ -z "$kernel_version" ]; then
      apt_update
      kernel_version=$(newest_kernel "$series" "$package_suffix")
    fi
    [ -n "$kernel_version" ] || fail "apt knows no linux-image-$series.*+deb12-amd64$package_suffix"
  fi
  package=linux-image-$kernel_version$package_suffix
  cache_lock
  kernel_deb=$(cached_kernel_deb "$package")
  if [ -n "$kernel_deb" ]; then
    want=$(candidate_version "$package")
    have=$(dpkg-deb -f "$kernel_deb" Version 2>/dev/null || true)
    if [ -n "$want" ] && [ "$have" != "$want" ]; then
      echo "kernel: the cached $(basename "$kernel_deb") is not apt's candidate $want: downloading that"
      kernel_deb=
    fi
  fi
  if [ -z "$kernel_deb" ]; then
    echo "kernel: downloading $package into $cache/deb"
    download_deb "$package" || {
      apt_update
      download_deb "$package" || {
        # That exact version left the mirror: the newest of its series.
        newest=$(newest_kernel "$series" "$package_suffix")
        [ -n "$newest" ] || fail "no linux-image-$series kernel on the mirror (see $cache/download.log)"
        echo "note: $package is gone from the mirror; using linux-image-$newest$package_suffix"
        kernel_version=$newest
        package=linux-image-$kernel_version$package_suffix
        [ -n "$(cached_kernel_deb "$package")" ] || download_deb "$package" ||
          fail "apt-get download $package failed: see $cache/download.log"
      }
    }
    kernel_deb=$(cached_kernel_deb "$package")
    [ -n "$kernel_deb" ] || fail "apt-get download left no ${package}_*.deb in $cache/deb"
  fi
  # The unpacked tree is named for the package file, so a new version of
  # the package is a new tree; the others go.
  kernel_dir="$cache/kernel/$(basename "$kernel_deb" .deb)"
  kernel="$kernel_dir/boot/vmlinuz-$kernel_version"
  if [ ! -f "$kernel" ]; then
    echo "kernel: unpacking $(basename "$kernel_deb")"
    rm -rf "$kernel_dir" "$kernel_dir.tmp"
    mkdir -p "$cache/kernel"
    dpkg-deb -x "$kernel_deb" "$kernel_dir.tmp" || fail "dpkg-deb -x $kernel_deb failed"
    [ -f "$kernel_dir.tmp/boot/vmlinuz-$kernel_version" ] ||
      fail "$kernel_deb holds no boot/vmlinuz-$kernel_version"
    mv "$kernel_dir.tmp" "$kernel_dir"
  fi
  for d in "$cache"/kernel/"$package"_*; do
    [ "$d" = "$kernel_dir" ] || rm -rf "$d"
  done
  cache_unlock
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

# shellcheck shell=sh
# Sourced by the benchmarks (bench/*.bench): the conditions every one of
# them prints first, the short form CI runs, and the load the recording
# benchmarks share.
#
#   bench_conditions        one line: CPU model and count, kernel, perf's
#                           version, the load average and whether a QEMU
#                           guest runs beside (a busy machine reads late and
#                           loses samples: compare figures only under the
#                           same conditions)
#   bench_smoke             true under BENCH_SMOKE=1 (make bench-smoke): each
#                           benchmark runs a short form, to show it still
#                           works, not to measure
#   bench_load DIR          compiles DIR/load: `load N` pins itself to CPU 0,
#                           prints its pid, makes N getppid(2) calls as fast
#                           as it can, then prints the calls per second it
#                           reached
#   bench_busy_events       the busy load's tracepoints, as perf record's -e
#                           takes them (irq:* and timer:* are globs):
#                           sched:sched_switch, sched_wakeup, sched_wakeup_new,
#                           sched_process_fork, sched_process_exit,
#                           raw_syscalls:sys_enter and sys_exit, irq:*, timer:*
#   bench_busy_cmd GROUPS MESSAGES LISTINGS
#                           the busy load, one command for sh -c: `perf bench
#                           sched messaging -g GROUPS -l MESSAGES` (GROUPS
#                           groups of 40 tasks) beside `ls /usr/lib` run
#                           LISTINGS times: a thousand tasks, two dozen
#                           events, the system calls most of the records
#   bench_cpu FILE CMD...   runs CMD under `perf stat -e task-clock` and
#                           writes the CPU seconds it and its children took
#                           (user + system, to the microsecond; /usr/bin/time
#                           prints hundredths, a tenth of a short round) to
#                           FILE; returns CMD's status

bench_conditions() {
	model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	qemu=$(pgrep -c qemu-system 2>/dev/null || true)
	echo "conditions: CPU ${model:-unknown} ($(getconf _NPROCESSORS_ONLN) online), kernel $(uname -r)," \
		"$(${PERF:-perf} version 2>/dev/null || echo 'no perf'), load average $(cut -d' ' -f1-3 /proc/loadavg)," \
		"qemu guests running: ${qemu:-0}"
}

bench_cpu() {
	bench_cpu_file=$1
	shift
	bench_cpu_rc=0
	${PERF:-perf} stat -x, -e task-clock -o "$bench_cpu_file.stat" -- "$@" || bench_cpu_rc=$?
	awk -F, '$3 ~ /^task-clock/ { printf "%.6f\n", $1 / 1000; found = 1 }
		END { if (!found) print "0" }' "$bench_cpu_file.stat" >"$bench_cpu_file"
	return "$bench_cpu_rc"
}

bench_smoke() {
	[ "${BENCH_SMOKE:-0}" = 1 ]
}

bench_load() {
	cat >"$1/load.c" <<'EOF'
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	long n = atol(argv[1]);
	cpu_set_t set;
	struct timespec a, b;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%.0f\n", s > 0 ? n / s : 0);
	return 0;
}
EOF
	${CC:-cc} -O2 -o "$1/load" "$1/load.c"
}

bench_busy_events() {
	echo "sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new" \
		"sched:sched_process_fork sched:sched_process_exit" \
		"raw_syscalls:sys_enter raw_syscalls:sys_exit irq:* timer:*"
}

bench_busy_cmd() {
	echo "'${PERF:-perf}' bench sched messaging -g $1 -l $2 >/dev/null 2>&1 & i=0
		while [ \$i -lt $3 ]; do ls /usr/lib >/dev/null; i=\$((i + 1)); done; wait"
}

/*
 * The two halves of bench/always_on.bench, compiled by it (cc -O2):
 *
 *   always_on loop N
 *       pins itself to CPU 0, makes N getsid(2) calls as fast as it can and
 *       prints the CPU time they took (user + system, CLOCK_THREAD_CPUTIME_ID)
 *       in ns, then their wall time in ns: the load whose slowdown is the
 *       tax. CPU time, because other tasks on CPU 0 stretch the wall time
 *       by however long they run, and not the tax
 *   always_on open TP_ID [--sample-type HEX] [--forward] [--no-watermark]
 *                        [--default-clock] [--pages N] [--filter F] [--no-mmap]
 *                        [--count]
 *       opens tracepoint TP_ID (tracefs events/.../id) on every online CPU as
 *       the broker opened a persistent tracepoint event before the lean
 *       layout (persistent/create.cpp sampling_attr() and
 *       persistent/event_open.cpp open_per_cpu(), with every field:
 *       sample_period 1, sample_type IP|TID|TIME|CPU|PERIOD|IDENTIFIER|RAW,
 *       sample_id_all, write_backward, use_clockid CLOCK_MONOTONIC, a
 *       wakeup_watermark of a quarter of the buffer, PAGES (128) data pages
 *       mapped read-only so the kernel overwrites), with the one attribute
 *       an option changes (--count: a counting event, sample_period 0, no
 *       buffer: what matching the tracepoint costs without a sample); prints "ready" and holds the events until SIGINT
 *       or SIGTERM. No product code: a variant measured here is a change to
 *       those two functions, not a change made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int loop(long n) {
	cpu_set_t set;
	struct timespec a, b, wa, wb;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("always_on loop: pinning to CPU 0");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &wa);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getsid, 0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	clock_gettime(CLOCK_MONOTONIC, &wb);
	printf("%lld %lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec),
	       (long long)(wb.tv_sec - wa.tv_sec) * 1000000000LL + (wb.tv_nsec - wa.tv_nsec));
	return 0;
}

static void on_signal(int sig) { (void)sig; }

static int open_events(int argc, char **argv) {
	struct perf_event_attr attr;
	uint64_t pages = 128;
	const char *filter = NULL;
	int mapped = 1;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	long page = sysconf(_SC_PAGESIZE);

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.size = sizeof(attr);
	attr.config = strtoull(argv[2], NULL, 0);
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			   PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_RAW;
	attr.sample_id_all = 1;
	attr.exclude_guest = 1; /* the event parser's default */
	attr.write_backward = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.watermark = 1;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--sample-type") && i + 1 < argc)
			attr.sample_type = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--forward"))
			attr.write_backward = 0;
		else if (!strcmp(argv[i], "--no-watermark"))
			attr.watermark = 0; /* wakeup_events 0: never woken */
		else if (!strcmp(argv[i], "--default-clock"))
			attr.use_clockid = 0, attr.clockid = 0;
		else if (!strcmp(argv[i], "--pages") && i + 1 < argc)
			pages = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
			filter = argv[++i];
		else if (!strcmp(argv[i], "--no-mmap"))
			mapped = 0;
		else if (!strcmp(argv[i], "--count"))
			attr.sample_period = 0, attr.sample_type = 0, mapped = 0;
		else {
			fprintf(stderr, "always_on open: unknown option '%s'\n", argv[i]);
			return 1;
		}
	}
	if (attr.watermark)
		attr.wakeup_watermark = (uint32_t)(pages * page / 4);
	for (long cpu = 0; cpu < ncpus; cpu++) {
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1, 0);
		if (fd < 0) {
			fprintf(stderr, "always_on open: perf_event_open(config %llu, cpu %ld): %s\n",
				(unsigned long long)attr.config, cpu, strerror(errno));
			return 1;
		}
		if (filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) != 0) {
			fprintf(stderr, "always_on open: filter '%s': %s\n", filter, strerror(errno));
			return 1;
		}
		if (mapped && mmap(NULL, (1 + pages) * page, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
			fprintf(stderr, "always_on open: mmap of %llu pages on cpu %ld: %s\n",
				(unsigned long long)pages, cpu, strerror(errno));
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}

int main(int argc, char **argv) {
	if (argc >= 3 && !strcmp(argv[1], "loop"))
		return loop(atol(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "open"))
		return open_events(argc, argv);
	fprintf(stderr, "usage: always_on loop N | always_on open TP_ID [options]\n");
	return 1;
}

/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * stats.h: what loadgen.c and udpgen.c share: a monotonic clock, a latency histogram (1 µs buckets up to
 * 10 ms, then 1 ms buckets up to 10 s), the loopback check on HOST, and the CPU time of a process
 * (utime + stime of all its threads, from /proc/PID/stat).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
#define FINE_BUCKETS 10000   /* 0 .. 9,999 µs by 1 µs */
#define COARSE_BUCKETS 10000 /* 10 ms .. 10 s by 1 ms */

static inline uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * NS_PER_S + (uint64_t)t.tv_nsec;
}

struct histogram {
    uint64_t fine[FINE_BUCKETS], coarse[COARSE_BUCKETS], count, max_ns;
};

static inline void histogram_add(struct histogram *h, uint64_t ns) {
    uint64_t us = ns / 1000;
    if (us < FINE_BUCKETS) h->fine[us]++;
    else h->coarse[us / 1000 < COARSE_BUCKETS ? us / 1000 : COARSE_BUCKETS - 1]++;
    h->count++;
    if (ns > h->max_ns) h->max_ns = ns;
}

/* The latency (µs) below which a fraction q of the samples fall: the upper edge of that sample's bucket. */
static inline double histogram_quantile(const struct histogram *h, double q) {
    if (h->count == 0) return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count), seen = 0;
    for (int i = 0; i < FINE_BUCKETS; i++)
        if ((seen += h->fine[i]) > rank) return i + 1;
    for (int i = 10; i < COARSE_BUCKETS; i++)
        if ((seen += h->coarse[i]) > rank) return (i + 1) * 1000.0;
    return (double)h->max_ns / 1000;
}

static inline int is_loopback(const char *host) { return strncmp(host, "127.", 4) == 0; }

/* Seconds of CPU the process has used (all threads), or -1 when it cannot be read. */
static inline double process_cpu_s(int pid) {
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    char *p = strrchr(line, ')'); /* the command name may hold spaces: fields count from after it */
    unsigned long long utime, stime;
    if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

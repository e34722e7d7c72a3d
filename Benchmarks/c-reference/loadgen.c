/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * loadgen: an independent TCP load generator for echo servers (loopback only), one thread, one epoll set.
 * It shares no code with our `loadtest`, so a figure measured with both is not one tool's artefact.
 *
 *   loadgen pingpong HOST PORT CONNS MSGSIZE SECONDS   every connection sends MSGSIZE bytes, waits for all of
 *                                                      them to come back, repeats: round trips/s, latency
 *   loadgen stream HOST PORT CONNS SECONDS             every connection writes 64 KiB chunks with at most
 *                                                      LOADGEN_STREAM_INFLIGHT (256 KiB) unechoed: MiB/s
 *   loadgen churn HOST PORT SECONDS [PARALLEL]         PARALLEL (1) slots, each: connect, 64 B echo, close
 *                                                      with a reset (SO_LINGER 0: no TIME_WAIT): conns/s
 *   loadgen idle HOST PORT CONNS SECONDS               open CONNS connections, print "HOLDING ...", hold
 *                                                      them SECONDS, close them
 *
 * Every connection sends its own pseudo-random byte stream and every byte that comes back is checked against
 * it: corruption, cross-talk, reordering and excess bytes are counted (corrupt=, excess=). Connections open
 * gradually, at most LOADGEN_MAX_PENDING (64) unconfirmed at a time (connecting, or, for pingpong and stream,
 * waiting for their first echo), so the server's accept backlog never overflows and every counted connection
 * was served. The load starts once all are confirmed; LOADGEN_WARMUP (1) s later the SECONDS window opens
 * (churn: the window opens LOADGEN_WARMUP s after the start). LOADGEN_CONNECT_TIMEOUT (30) s bounds the
 * ramp-up. With LOADGEN_SERVER_PID, the server's CPU over the window (all its threads, /proc/PID/stat) is
 * reported as srv_cpu= (% of one core) and srv_us_per_op= (µs per round trip or connection).
 *
 * The last line is machine-readable: `RESULT mode=... secs=... rps=|cps=|mib_s=... ... errors=N ...`.
 * Exit status 0 without errors, 1 with errors, 2 on a usage or set-up error.
 *
 * Several servers in turn (pingpong and churn): PORT may be a comma-separated list (at most 8), with
 * LOADGEN_SERVER_PID a list of the same length. Each server gets its own CONNS (churn: PARALLEL) connections,
 * and the load goes to one server at a time for a slice of LOADGEN_SLICE (0.5) s, in rotation: when a slice
 * ends, its connections finish the round trip (or connection) in flight and park, and only then does the
 * next server's slice begin, so no two servers are ever loaded at once. A slow drift of the machine's speed
 * (other tenants of the host) then falls on every server alike, where in one window per server it lands on
 * whichever ran at the time. Whole rotations only are counted: those that begin LOADGEN_WARMUP s after the
 * load starts, until SECONDS of counted rotation have passed. Each server's CPU is read at both ends of each
 * of its slices (clock_getcpuclockid: nanoseconds, all threads) and its operations counted over the same
 * span. One RESULT line per server (`target=K port=P`), with `slice_us=` its cost per operation in each
 * counted slice, in order: the slices of one rotation are neighbours in time, so their ratios are paired.
 */
#include "stats.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#define PERIOD 65521u     /* the byte pattern's period: prime, so streams of different phases differ */
#define CHUNK (64 * 1024) /* the most sent or received at once */
#define MAX_TARGETS 8     /* servers taken in turn */

enum mode { PINGPONG, STREAM, CHURN, IDLE };
enum state { FREE, CONNECTING, CONFIRMING, READY, RUNNING };

struct connection {
    int fd, server; /* server: which one (index into servers), fixed for the slot */
    enum state state;
    int writable_wanted;
    uint32_t phase;
    uint64_t sent, received, target; /* stream positions; `target`: where the current message ends */
    uint64_t started_at;             /* when the current round trip (churn: connection) began */
};

static struct {
    unsigned long long corrupt, excess, eof, reset, refused, timed_out, connect_timeout, other;
} errors;
static enum mode mode;
static struct connection *connections;
static int connection_count, epoll_fd, pending, established, failed, closed_by_server, load_started;
static size_t message_size = 64;
static uint64_t stream_inflight = 256 * 1024, serial, operations, window_bytes;
static uint64_t window_start = UINT64_MAX, window_end = UINT64_MAX;
static struct sockaddr_in servers[MAX_TARGETS];
static int target_count = 1, server_pids[MAX_TARGETS];
static unsigned char pattern[PERIOD + CHUNK], buffer[CHUNK];
static struct histogram latency;
static volatile sig_atomic_t interrupted;

static void on_signal(int signal_number) { (void)signal_number; interrupted = 1; }

static unsigned long long error_total(void) {
    return errors.corrupt + errors.excess + errors.eof + errors.reset + errors.refused + errors.timed_out +
           errors.connect_timeout + errors.other;
}

static void count_errno(int error) {
    switch (error) {
    case ECONNRESET: case EPIPE: errors.reset++; break;
    case ECONNREFUSED: errors.refused++; break;
    case ETIMEDOUT: errors.timed_out++; break;
    default: errors.other++; break;
    }
}

/* Several servers in turn (see the top of the file): what the rotation is doing, and each server's counts. */
static struct {
    int on, active, draining, counting, done;
    uint64_t slice_ns, slice_start, slice_end, warmup_end, needed_ns;
    double cpu_at_start;
    uint64_t operations_at_start;
} rotation;

/* Whether an operation completing now counts: in a counted rotation when servers take turns, else in the window. */
static int in_window(uint64_t now) {
    return rotation.on ? rotation.counting : now >= window_start && now < window_end;
}

static void set_interest(struct connection *c, int writable) {
    struct epoll_event interest = { .events = EPOLLIN | (writable ? EPOLLOUT : 0), .data.u32 = (uint32_t)(c - connections) };
    c->writable_wanted = writable;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &interest);
}

static void close_connection(struct connection *c, int reset) {
    if (reset) {
        struct linger linger = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &linger, sizeof linger);
    }
    close(c->fd);
    c->fd = -1;
    c->state = FREE;
}

/* A connection that failed before it was confirmed: counts against the ramp-up (churn just starts again). */
static void fail_unconfirmed(struct connection *c) {
    close_connection(c, 0);
    if (mode != CHURN) { pending--; failed++; }
}

static int start_connect(struct connection *c, uint64_t now) {
    *c = (struct connection){ .fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), .state = CONNECTING,
                              .server = c->server, .phase = (uint32_t)((serial++ * 7919u) % PERIOD), .started_at = now };
    if (c->fd < 0) { count_errno(errno); c->state = FREE; return -1; }
    const struct sockaddr_in *server = &servers[c->server];
    if (connect(c->fd, (const struct sockaddr *)server, sizeof *server) < 0 && errno != EINPROGRESS) {
        count_errno(errno);
        close_connection(c, 0);
        return -1;
    }
    struct epoll_event interest = { .events = EPOLLOUT, .data.u32 = (uint32_t)(c - connections) };
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &interest);
    return 0;
}

/* Sends the stream up to c->target (stream mode: keeps LOADGEN_STREAM_INFLIGHT unechoed); 0, or -1 on error. */
static int send_more(struct connection *c) {
    if (mode == STREAM && c->state == RUNNING) c->target = c->received + stream_inflight;
    while (c->sent < c->target) {
        uint64_t length = c->target - c->sent < CHUNK ? c->target - c->sent : CHUNK;
        ssize_t n = send(c->fd, pattern + (c->phase + c->sent) % PERIOD, length, MSG_NOSIGNAL);
        if (n > 0) { c->sent += (uint64_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->writable_wanted) set_interest(c, 1);
            return 0;
        }
        count_errno(errno);
        return -1;
    }
    if (c->writable_wanted) set_interest(c, 0);
    return 0;
}

static int begin_message(struct connection *c, size_t size, uint64_t now) {
    c->target = c->sent + size;
    c->started_at = now;
    return send_more(c);
}

/* Each server's counts when several take turns. */
static struct target_figures {
    uint64_t operations, active_ns;
    double cpu_s;
    struct histogram *latency;
    double *slice_us;
    int slices, slice_capacity;
} figures[MAX_TARGETS];

/* CPU seconds of a whole process (all threads) from its CPU-time clock, to the nanosecond; -1 if unreadable. */
static double process_cpu_clock_s(int pid) {
    clockid_t clock;
    struct timespec t;
    if (pid <= 0 || clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &t) != 0) return -1;
    return (double)t.tv_sec + (double)t.tv_nsec / NS_PER_S;
}

/* Whether a connection is in its server's load now (the ones outside it are parked, READY or FREE). */
static int is_loaded(const struct connection *c) { return !rotation.on || (c->server == rotation.active && !rotation.draining); }

static void start_load(uint64_t now) {
    load_started = 1;
    for (int i = 0; i < connection_count; i++) {
        struct connection *c = &connections[i];
        if (c->state != READY || !is_loaded(c)) continue;
        c->state = RUNNING;
        if ((mode == STREAM ? send_more(c) : begin_message(c, message_size, now)) < 0) close_connection(c, 0);
    }
}

/* Whether the draining server still has a round trip (churn: a connection) in flight. */
static int active_in_flight(void) {
    for (int i = 0; i < connection_count; i++) {
        const struct connection *c = &connections[i];
        if (c->server == rotation.active && (mode == CHURN ? c->state != FREE : c->state == RUNNING)) return 1;
    }
    return 0;
}

static void begin_slice(uint64_t now) {
    rotation.draining = 0;
    rotation.slice_start = now;
    rotation.slice_end = now + rotation.slice_ns;
    if (rotation.active == 0) rotation.counting = now >= rotation.warmup_end; /* whole rotations only */
    rotation.cpu_at_start = process_cpu_clock_s(server_pids[rotation.active]);
    rotation.operations_at_start = figures[rotation.active].operations;
    if (mode == PINGPONG) start_load(now); /* churn: the main loop connects the active server's free slots */
}

static void end_slice(uint64_t now) {
    struct target_figures *f = &figures[rotation.active];
    if (rotation.counting) {
        double cpu = process_cpu_clock_s(server_pids[rotation.active]) - rotation.cpu_at_start;
        uint64_t operations = f->operations - rotation.operations_at_start;
        f->cpu_s += cpu;
        f->active_ns += now - rotation.slice_start;
        if (f->slices == f->slice_capacity) {
            f->slice_capacity = f->slice_capacity ? 2 * f->slice_capacity : 64;
            f->slice_us = realloc(f->slice_us, (size_t)f->slice_capacity * sizeof *f->slice_us);
            if (f->slice_us == NULL) { fprintf(stderr, "loadgen: out of memory\n"); exit(2); }
        }
        f->slice_us[f->slices++] = operations > 0 ? cpu * 1e6 / (double)operations : 0;
    }
    /* Every server has had as many counted slices as the last one: stop once they add up to SECONDS. */
    if (rotation.active == target_count - 1 && (uint64_t)f->slices * rotation.slice_ns >= rotation.needed_ns)
        rotation.done = 1;
}

/* Ends the active server's slice once its time is up and its connections are parked, then starts the next. */
static void rotate(uint64_t now) {
    if (!rotation.draining && now >= rotation.slice_end) rotation.draining = 1;
    if (!rotation.draining || active_in_flight()) return;
    end_slice(now);
    if (rotation.done) return;
    rotation.active = (rotation.active + 1) % target_count;
    begin_slice(now);
}

/* The message that ended at c->target came back whole. */
static void message_echoed(struct connection *c, uint64_t now) {
    if (c->state == CONFIRMING) {
        pending--;
        established++;
        c->state = READY;
        return;
    }
    if (in_window(now)) {
        operations++;
        histogram_add(&latency, now - c->started_at);
        if (rotation.on) {
            figures[c->server].operations++;
            histogram_add(figures[c->server].latency, now - c->started_at);
        }
    }
    if (mode == CHURN) {
        /* The slot starts again at the top of the loop, after this batch of events: a later event of the
         * batch for the closed descriptor must not reach its successor. */
        close_connection(c, getenv("LOADGEN_LINGER0") == NULL || atoi(getenv("LOADGEN_LINGER0")) != 0);
    } else if (!is_loaded(c)) {
        c->state = READY; /* its server's slice is over: park until the next */
    } else if (begin_message(c, message_size, now) < 0) {
        close_connection(c, 0);
    }
}

static void connected(struct connection *c, uint64_t now) {
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
        count_errno(error);
        fail_unconfirmed(c);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_interest(c, 0);
    if (mode == IDLE) {
        pending--;
        established++;
        c->state = READY;
    } else if (mode == CHURN) {
        c->state = RUNNING;
        if (begin_message(c, 64, c->started_at) < 0) fail_unconfirmed(c);
    } else {
        c->state = CONFIRMING;
        if (begin_message(c, mode == STREAM ? 1 : message_size, now) < 0) fail_unconfirmed(c);
    }
}

static void readable(struct connection *c, uint64_t now) {
    ssize_t n = recv(c->fd, buffer, CHUNK, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
        if (n == 0 && mode == IDLE) closed_by_server++;
        else if (n == 0) errors.eof++;
        else count_errno(errno);
        if (c->state == CONFIRMING || (mode == CHURN && c->state == RUNNING)) fail_unconfirmed(c);
        else close_connection(c, 0);
        return;
    }
    if (c->received + (uint64_t)n > c->sent) {
        errors.excess++;
        close_connection(c, 0);
        return;
    }
    if (memcmp(buffer, pattern + (c->phase + c->received) % PERIOD, (size_t)n) != 0) {
        errors.corrupt++;
        close_connection(c, 0);
        return;
    }
    c->received += (uint64_t)n;
    if (mode == STREAM && c->state == RUNNING) {
        if (in_window(now)) window_bytes += (uint64_t)n;
        if (send_more(c) < 0) close_connection(c, 0);
    } else if (c->received == c->target) {
        message_echoed(c, now);
    }
}

/* One server's figures from a rotation: a summary line, then its RESULT line. */
static void print_target(int t, int per_target, const char *errs) {
    const struct target_figures *f = &figures[t];
    double secs = (double)f->active_ns / NS_PER_S, rate = secs > 0 ? (double)f->operations / secs : 0;
    double p50 = histogram_quantile(f->latency, 0.5), p99 = histogram_quantile(f->latency, 0.99),
           p999 = histogram_quantile(f->latency, 0.999);
    int port = ntohs(servers[t].sin_port);
    printf("%s, server %d (port %d): %d slices, %.1f s loaded: %.0f %s/s, p50 %.0f us, p99 %.0f us\n",
           mode == CHURN ? "churn" : "pingpong", t, port, f->slices, secs, rate,
           mode == CHURN ? "connections" : "round trips", p50, p99);
    printf("RESULT mode=%s target=%d port=%d %s=%d size=%zu secs=%.1f %s=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f",
           mode == CHURN ? "churn" : "pingpong", t, port, mode == CHURN ? "parallel" : "conns", per_target,
           message_size, secs, mode == CHURN ? "cps" : "rps", rate, p50, p99, p999);
    if (server_pids[t] > 0 && secs > 0 && f->operations > 0)
        printf(" srv_cpu=%.0f srv_us_per_op=%.2f", 100 * f->cpu_s / secs, f->cpu_s * 1e6 / (double)f->operations);
    printf(" slices=%d slice_us=", f->slices);
    for (int i = 0; i < f->slices; i++) printf("%s%.3f", i ? "," : "", f->slice_us[i]);
    printf(" %s\n", errs);
}

static void usage(void) {
    fprintf(stderr, "usage:\n  loadgen pingpong HOST PORT[,PORT...] CONNS MSGSIZE SECONDS\n"
                    "  loadgen stream HOST PORT CONNS SECONDS\n"
                    "  loadgen churn HOST PORT[,PORT...] SECONDS [PARALLEL]\n  loadgen idle HOST PORT CONNS SECONDS\n"
                    "HOST must be an IPv4 loopback address (127.x.x.x). Several ports take turns (see the source).\n");
    exit(2);
}

static double env_or(const char *name, double otherwise) {
    const char *value = getenv(name);
    return value != NULL && *value != 0 ? atof(value) : otherwise;
}

int main(int argc, char **argv) {
    if (argc < 2) usage();
    const char *m = argv[1];
    double seconds;
    if (!strcmp(m, "pingpong") && argc == 7) {
        mode = PINGPONG; connection_count = atoi(argv[4]); message_size = (size_t)atol(argv[5]); seconds = atof(argv[6]);
    } else if (!strcmp(m, "stream") && argc == 6) {
        mode = STREAM; connection_count = atoi(argv[4]); seconds = atof(argv[5]);
    } else if (!strcmp(m, "churn") && (argc == 5 || argc == 6)) {
        mode = CHURN; seconds = atof(argv[4]); connection_count = argc == 6 ? atoi(argv[5]) : 1;
    } else if (!strcmp(m, "idle") && argc == 6) {
        mode = IDLE; connection_count = atoi(argv[4]); seconds = atof(argv[5]);
    } else {
        usage();
    }
    if (!is_loopback(argv[2])) { fprintf(stderr, "loadgen: HOST must be 127.x.x.x, not %s\n", argv[2]); return 2; }
    if (connection_count < 1 || seconds <= 0 || seconds > 3600 || message_size < 1 || message_size > (1u << 30))
        usage();
    target_count = 0;
    for (char *ports = argv[3], *end; ; ports = end + 1) {
        long port = strtol(ports, &end, 10);
        if (end == ports || port <= 0 || port > 65535 || target_count == MAX_TARGETS || (*end != 0 && *end != ','))
            usage();
        servers[target_count] = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        inet_pton(AF_INET, argv[2], &servers[target_count++].sin_addr);
        if (*end == 0) break;
    }
    const char *pids = getenv("LOADGEN_SERVER_PID");
    for (int t = 0; t < target_count && pids != NULL && *pids != 0; t++) {
        char *end;
        server_pids[t] = (int)strtol(pids, &end, 10);
        pids = *end == ',' ? end + 1 : end;
    }
    rotation.on = target_count > 1;
    if (rotation.on && mode != PINGPONG && mode != CHURN) {
        fprintf(stderr, "loadgen: several ports take turns in pingpong and churn only\n");
        return 2;
    }
    int per_target = connection_count;
    connection_count *= target_count;
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_cur != RLIM_INFINITY && (rlim_t)connection_count + 16 > limit.rlim_cur) {
        fprintf(stderr, "loadgen: %d connections exceed the descriptor limit %llu\n", connection_count,
                (unsigned long long)limit.rlim_cur);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int server_pid = server_pids[0];
    int max_pending = (int)env_or("LOADGEN_MAX_PENDING", 64);
    double warmup = env_or("LOADGEN_WARMUP", 1), connect_timeout = env_or("LOADGEN_CONNECT_TIMEOUT", 30);
    stream_inflight = (uint64_t)env_or("LOADGEN_STREAM_INFLIGHT", 256 * 1024);
    if (max_pending < 1) max_pending = 1;
    if (stream_inflight < 2) stream_inflight = 2;
    for (size_t i = 0, x = 2463534242u; i < sizeof pattern; i++) { /* xorshift: any fixed bytes would do */
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        pattern[i] = i < PERIOD ? (unsigned char)x : pattern[i - PERIOD];
    }
    connections = calloc((size_t)connection_count, sizeof *connections);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (connections == NULL || epoll_fd < 0) return 2;
    for (int i = 0; i < connection_count; i++) connections[i].server = i / per_target;
    if (rotation.on) {
        rotation.slice_ns = (uint64_t)(env_or("LOADGEN_SLICE", 0.5) * NS_PER_S);
        rotation.needed_ns = (uint64_t)(seconds * NS_PER_S);
        if (rotation.slice_ns < 10000000u) { fprintf(stderr, "loadgen: LOADGEN_SLICE must be at least 0.01 s\n"); return 2; }
        for (int t = 0; t < target_count; t++)
            if ((figures[t].latency = calloc(1, sizeof *figures[t].latency)) == NULL) return 2;
    }

    uint64_t start = now_ns(), ramp_ns = 0;
    uint64_t connect_deadline = start + (uint64_t)(connect_timeout * NS_PER_S);
    /* Taking turns, each server has its SECONDS after the warm-up, plus up to one more rotation to begin on. */
    double load_s = rotation.on ? (warmup + seconds) * target_count + (double)rotation.slice_ns / NS_PER_S * target_count
                                : warmup + seconds;
    uint64_t hard_deadline = start + (uint64_t)((connect_timeout + load_s + 30) * NS_PER_S);
    int started = 0, ramping = mode != CHURN, window_open = 0;
    double server_cpu = 0, own_cpu = 0;
    if (mode == CHURN) {
        for (int i = 0; i < connection_count; i++)
            if (is_loaded(&connections[i])) start_connect(&connections[i], start);
        window_start = start + (uint64_t)(warmup * NS_PER_S);
        window_end = window_start + (uint64_t)(seconds * NS_PER_S);
        if (rotation.on) {
            rotation.warmup_end = window_start;
            window_start = start; /* the single-server window is not used: the rotation counts */
            window_end = UINT64_MAX;
            begin_slice(start);
        }
    }
    static struct epoll_event events[1024];
    for (;;) {
        uint64_t now = now_ns();
        if (interrupted || now > hard_deadline) {
            fprintf(stderr, "loadgen: %s\n", interrupted ? "interrupted" : "hard deadline exceeded");
            errors.other++;
            break;
        }
        if (ramping) {
            while (started < connection_count && pending < max_pending && now < connect_deadline)
                if (start_connect(&connections[started++], now) == 0) pending++; else failed++;
            if (established + failed >= connection_count || now >= connect_deadline) {
                for (int i = 0; i < connection_count; i++) /* the ramp-up timed out: what is left failed */
                    if (connections[i].state == CONNECTING || connections[i].state == CONFIRMING) {
                        errors.connect_timeout++;
                        fail_unconfirmed(&connections[i]);
                    }
                errors.connect_timeout += (unsigned long long)(connection_count - started);
                failed += connection_count - started;
                ramping = 0;
                ramp_ns = now - start;
                if (mode == IDLE) {
                    printf("HOLDING established=%d failed=%d connect_s=%.2f\n", established, failed, ramp_ns / 1e9);
                    fflush(stdout);
                    window_start = now;
                } else if (rotation.on) {
                    rotation.warmup_end = now + (uint64_t)(warmup * NS_PER_S);
                    window_start = now;
                    begin_slice(now);
                } else {
                    start_load(now);
                    window_start = now + (uint64_t)(warmup * NS_PER_S);
                }
                window_end = rotation.on ? UINT64_MAX : window_start + (uint64_t)(seconds * NS_PER_S);
            }
        }
        if (rotation.on && rotation.slice_end != 0) {
            rotate(now);
            if (rotation.done) break;
        }
        if (mode == CHURN)
            for (int i = 0; i < connection_count; i++)
                if (connections[i].state == FREE && is_loaded(&connections[i])) start_connect(&connections[i], now);
        if (!window_open && now >= window_start) {
            window_open = 1;
            server_cpu = server_pid > 0 ? process_cpu_s(server_pid) : -1;
            own_cpu = process_cpu_s(getpid());
        }
        if (now >= window_end) break;
        uint64_t next = window_open ? window_end : window_start;
        if (rotation.on && rotation.slice_end != 0 && !rotation.draining) next = rotation.slice_end;
        int timeout_ms = next == UINT64_MAX || next - now > 10000000u ? 10 : (int)((next - now) / 1000000u);
        int count = epoll_wait(epoll_fd, events, 1024, timeout_ms);
        now = now_ns();
        for (int e = 0; e < count; e++) {
            struct connection *c = &connections[events[e].data.u32];
            if (c->fd < 0) continue; /* closed by an earlier event of this batch */
            if (c->state == CONNECTING) { connected(c, now); continue; }
            if (events[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) readable(c, now);
            if (c->fd >= 0 && (events[e].events & EPOLLOUT) && send_more(c) < 0) close_connection(c, 0);
        }
    }
    double window_s = window_open ? (double)(now_ns() - window_start) / NS_PER_S : 0;
    if (window_s > seconds) window_s = seconds;
    double server_used = server_cpu >= 0 && window_open ? process_cpu_s(server_pid) - server_cpu : -1;
    double own_used = process_cpu_s(getpid()) - own_cpu;
    char cpu[160] = "";
    if (mode != IDLE && window_s > 0) {
        int n = snprintf(cpu, sizeof cpu, " cli_cpu=%.0f", 100 * own_used / window_s);
        if (server_pid > 0 && server_used >= 0) {
            n += snprintf(cpu + n, sizeof cpu - (size_t)n, " srv_cpu=%.0f", 100 * server_used / window_s);
            if (operations > 0)
                snprintf(cpu + n, sizeof cpu - (size_t)n, " srv_us_per_op=%.2f", server_used * 1e6 / (double)operations);
        }
    }
    char errs[320];
    snprintf(errs, sizeof errs, "errors=%llu corrupt=%llu excess=%llu eof=%llu reset=%llu refused=%llu timedout=%llu "
             "connect_timeout=%llu other=%llu", error_total(), errors.corrupt, errors.excess, errors.eof, errors.reset,
             errors.refused, errors.timed_out, errors.connect_timeout, errors.other);
    if (rotation.on) {
        for (int t = 0; t < target_count; t++) print_target(t, per_target, errs);
        fflush(stdout);
        return error_total() == 0 && rotation.done ? 0 : 1;
    }
    double rate = window_s > 0 ? (double)operations / window_s : 0;
    double p50 = histogram_quantile(&latency, 0.5), p99 = histogram_quantile(&latency, 0.99),
           p999 = histogram_quantile(&latency, 0.999);
    switch (mode) {
    case PINGPONG:
        printf("pingpong: %d/%d connections (ramp-up %.2f s), %.1f s window: %.0f round trips/s, p50 %.0f us, p99 %.0f us\n",
               established, connection_count, ramp_ns / 1e9, window_s, rate, p50, p99);
        printf("RESULT mode=pingpong conns=%d size=%zu secs=%.1f ok_conns=%d rps=%.0f p50_us=%.1f p99_us=%.1f "
               "p999_us=%.1f%s %s\n", connection_count, message_size, window_s, established, rate, p50, p99, p999, cpu, errs);
        break;
    case STREAM: {
        double mib = window_s > 0 ? (double)window_bytes / window_s / 1048576 : 0;
        printf("stream: %d/%d connections, %.1f s window: %.1f MiB/s echoed\n", established, connection_count, window_s, mib);
        printf("RESULT mode=stream conns=%d secs=%.1f ok_conns=%d mib_s=%.1f%s %s\n", connection_count, window_s,
               established, mib, cpu, errs);
        break;
    }
    case CHURN:
        printf("churn: %d in parallel, %.1f s window: %.0f connections/s, p50 %.0f us, p99 %.0f us\n", connection_count,
               window_s, rate, p50, p99);
        printf("RESULT mode=churn parallel=%d secs=%.1f cps=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f%s %s\n",
               connection_count, window_s, rate, p50, p99, p999, cpu, errs);
        break;
    case IDLE: {
        int open = 0;
        for (int i = 0; i < connection_count; i++) open += connections[i].state == READY;
        printf("idle: %d/%d connections established in %.2f s, %d still open after %.1f s\n", established,
               connection_count, ramp_ns / 1e9, open, window_s);
        printf("RESULT mode=idle conns=%d secs=%.1f ok=%d established=%d failed=%d closed_by_server=%d connect_s=%.2f %s\n",
               connection_count, window_s, open, established, failed, closed_by_server, ramp_ns / 1e9, errs);
        break;
    }
    }
    fflush(stdout);
    return error_total() == 0 ? 0 : 1;
}

/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * httpgen: the least an HTTP/1.1 keep-alive load generator can do per request, closed or open loop, one
 * thread, one epoll set, loopback only. It is the floor `loadtest http` is measured against: it shares no
 * code with `loadtest`, and does nothing a generator could leave out.
 *
 *   httpgen HOST PORT CONNS SECONDS [RATE [SLACK_US]]
 *
 * Every connection sends `GET / HTTP/1.1` and frames the responses (a head, and a body of its
 * Content-Length; a response without one is an error). RATE 0 (the default) is closed loop: one request per
 * connection, each response sending the next at once, latency counted from the send. RATE R is open loop
 * (wrk2's model): request k is due at start + k/R and goes to the next idle connection, or, when none is
 * idle, is pipelined on the next with fewer than 1,024 out (as loadtest does), and latency counts from that
 * intended time. One timerfd paces the loop: armed for the next request's time, or SLACK_US
 * (default 50) after the wakeup that arms it if that is later, so a wakeup sends every request due by then;
 * a response that arrives while requests are due sends them too. The window opens after a 1 s warm-up.
 *
 * The last line is machine-readable: `RESULT mode=closed|open secs=... rps=... target=... p50_us=...
 * p90_us=... p99_us=... cpu_us_per_req=... waits_per_req=... errors=N`, where cpu_us_per_req is the CPU time
 * of the thread (user and system) over the window divided by the responses in it, and waits_per_req the
 * epoll_waits that blocked and found an event, per response. Exit status 0 without errors, 1 with errors,
 * 2 on a usage or set-up error.
 */
#include "stats.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#define TIMER_TOKEN UINT32_MAX
#define BUFFER_SIZE (64 * 1024)
#define WARMUP_NS NS_PER_S
#define MAX_IN_FLIGHT 1024 /* per connection, open loop (HTTP/1.1 pipelining), as loadtest allows */

struct connection {
    int fd;
    unsigned outstanding;   /* requests out whose responses are not complete */
    unsigned oldest;        /* the ring slot of the oldest of them */
    uint64_t latency_from[MAX_IN_FLIGHT]; /* each one's intended time (open loop) or send time (closed) */
    size_t have;            /* bytes of the oldest response received so far */
    size_t need;            /* its whole length, 0 while its head is incomplete */
    char head[1024];        /* its start, until its head is complete */
};

static const char request[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
static struct connection *connections;
static int connection_count, cursor;
static unsigned long long errors;
static uint64_t responses, window_start, window_end;
static struct histogram latency;

static double thread_cpu_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void send_request(struct connection *c, uint64_t latency_from) {
    ssize_t n = send(c->fd, request, sizeof request - 1, MSG_NOSIGNAL);
    if (n != (ssize_t)(sizeof request - 1)) { errors++; return; } /* a short send of 36 bytes is a failure here */
    c->latency_from[(c->oldest + c->outstanding) % MAX_IN_FLIGHT] = latency_from;
    c->outstanding++;
}

/* The next connection with room for a request, round robin (an idle one first, as one that is waiting
 * makes the request wait behind its response); NULL if none has room. */
static struct connection *next_with_room(void) {
    struct connection *pipelined = NULL;
    for (int i = 0; i < connection_count; i++) {
        struct connection *c = &connections[cursor];
        cursor = (cursor + 1) % connection_count;
        if (c->fd < 0) continue;
        if (c->outstanding == 0) return c;
        if (pipelined == NULL && c->outstanding < MAX_IN_FLIGHT) pipelined = c;
    }
    return pipelined;
}

/* Frames the bytes that arrived on `c` into responses, oldest request first, calling `complete` with each
 * one's latency origin; returns 0, or -1 when they cannot be framed (no request waiting, no Content-Length, a
 * head over 1 KiB). */
static int receive(struct connection *c, const char *data, size_t length, uint64_t now) {
    while (length > 0) {
        if (c->outstanding == 0) return -1;
        if (c->need == 0) {
            size_t copy = length < sizeof c->head - c->have ? length : sizeof c->head - c->have;
            memcpy(c->head + c->have, data, copy);
            size_t seen = c->have + copy;
            char *end = memmem(c->head, seen, "\r\n\r\n", 4);
            if (end == NULL) {
                if (seen == sizeof c->head) return -1;
                c->have = seen;
                return 0;
            }
            char *field = memmem(c->head, (size_t)(end - c->head), "Content-Length:", 15);
            if (field == NULL) field = memmem(c->head, (size_t)(end - c->head), "content-length:", 15);
            if (field == NULL) return -1;
            c->need = (size_t)(end + 4 - c->head) + strtoul(field + 15, NULL, 10);
        }
        size_t take = c->need - c->have < length ? c->need - c->have : length;
        c->have += take;
        data += take;
        length -= take;
        if (c->have < c->need) return 0;
        /* One response complete. */
        uint64_t from = c->latency_from[c->oldest];
        c->oldest = (c->oldest + 1) % MAX_IN_FLIGHT;
        c->outstanding--;
        c->have = c->need = 0;
        responses++;
        if (now >= window_start && now < window_end) histogram_add(&latency, now - from);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: httpgen HOST PORT CONNS SECONDS [RATE [SLACK_US]]\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    connection_count = atoi(argv[3]);
    double seconds = atof(argv[4]), rate = argc > 5 ? atof(argv[5]) : 0;
    uint64_t slack = (argc > 6 ? strtoull(argv[6], NULL, 10) : 50) * 1000;
    struct sockaddr_in server = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (!is_loopback(host) || inet_pton(AF_INET, host, &server.sin_addr) != 1 || port <= 0 || port > 65535 ||
        connection_count <= 0 || seconds <= 0 || rate < 0) {
        fprintf(stderr, "httpgen: bad arguments (HOST must be a 127.x.y.z address)\n");
        return 2;
    }
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    connections = calloc((size_t)connection_count, sizeof *connections);
    if (epoll_fd < 0 || timer_fd < 0 || connections == NULL) { perror("httpgen: set-up"); return 2; }
    struct epoll_event timer_interest = { .events = EPOLLIN, .data.u32 = TIMER_TOKEN };
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, timer_fd, &timer_interest);
    for (int i = 0; i < connection_count; i++) {
        struct connection *c = &connections[i];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (c->fd < 0 || setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
            connect(c->fd, (struct sockaddr *)&server, sizeof server) < 0) {
            perror("httpgen: connect");
            return 2;
        }
        struct epoll_event interest = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &interest);
    }

    uint64_t start = now_ns(), interval = rate > 0 ? (uint64_t)(1e9 / rate) : 0, issued = 0, armed = 0;
    window_start = start + WARMUP_NS;
    window_end = window_start + (uint64_t)(seconds * 1e9);
    uint64_t window_responses = 0, waits = 0, window_waits = 0;
    double cpu_at_start = -1, cpu_at_end = -1;
    static char buffer[BUFFER_SIZE];
    struct epoll_event events[256];
    if (rate == 0)
        for (int i = 0; i < connection_count; i++) send_request(&connections[i], start);
    for (;;) {
        uint64_t now = now_ns();
        if (cpu_at_start < 0 && now >= window_start) { cpu_at_start = thread_cpu_us(); window_responses = responses; window_waits = waits; }
        if (now >= window_end) break;
        if (rate > 0) {
            /* Every request due by now, each with its intended time, while a connection has room. */
            uint64_t due = start + issued * interval;
            struct connection *c;
            while (due <= now && (c = next_with_room()) != NULL) {
                send_request(c, due);
                due = start + ++issued * interval;
            }
            uint64_t deadline = due > now + slack ? due : now + slack;
            if (deadline != armed && !(armed >= due && armed - due <= slack)) {
                struct itimerspec at = { .it_value = { .tv_sec = (time_t)(deadline / NS_PER_S),
                                                       .tv_nsec = (long)(deadline % NS_PER_S) } };
                timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &at, NULL);
                armed = deadline;
            }
        }
        int count = epoll_wait(epoll_fd, events, 256, 1000);
        if (count < 0 && errno != EINTR) { perror("httpgen: epoll_wait"); return 2; }
        if (count > 0) waits++;
        now = now_ns();
        for (int i = 0; i < count; i++) {
            uint32_t token = events[i].data.u32;
            if (token == TIMER_TOKEN) {
                armed = 0; /* re-arming it below clears the expiration, so no read is needed */
                continue;
            }
            struct connection *c = &connections[token];
            ssize_t n = recv(c->fd, buffer, sizeof buffer, 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            uint64_t before = responses;
            if (n <= 0 || receive(c, buffer, (size_t)n, now) < 0) { /* closed, failed or unframeable */
                errors++;
                epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                continue;
            }
            if (rate == 0 && responses > before) send_request(c, now);
        }
    }
    cpu_at_end = thread_cpu_us();
    window_responses = responses - window_responses;
    window_waits = waits - window_waits;
    double window_s = (double)(window_end - window_start) / 1e9;
    printf("RESULT mode=%s secs=%.2f rps=%.0f target=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f "
           "cpu_us_per_req=%.2f waits_per_req=%.2f errors=%llu\n",
           rate > 0 ? "open" : "closed", window_s, (double)window_responses / window_s, rate,
           histogram_quantile(&latency, 0.50), histogram_quantile(&latency, 0.90), histogram_quantile(&latency, 0.99),
           window_responses ? (cpu_at_end - cpu_at_start) / (double)window_responses : 0,
           window_responses ? (double)window_waits / (double)window_responses : 0, errors);
    return errors ? 1 : 0;
}

/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * udpgen HOST PORT FLOWS SIZE SECONDS: an independent UDP ping-pong generator, the driver of the UDP echo
 * benchmarks. FLOWS connected UDP sockets on one thread and one epoll set, each with one SIZE-byte datagram
 * in flight: a header (flow, sequence number) and bytes derived from both, every echoed byte checked. A
 * datagram not echoed within UDPGEN_LOSS_MS (200) ms counts as lost and the flow sends the next one; a late
 * echo of an earlier datagram counts as stale. UDPGEN_WARMUP (1) s of load come before the SECONDS measured.
 * The last line is machine-readable:
 *   RESULT mode=udp flows=.. size=.. secs=.. rps=.. p50_us=.. p99_us=.. p999_us=.. lost=.. corrupt=.. stale=.. errors=..
 * Exit status 0 when no datagram was corrupt, 1 otherwise, 2 on a usage or set-up error.
 */
#include "stats.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define MAX_SIZE 65507
#define HEADER 12 /* flow (4 bytes), sequence (8 bytes) */

struct flow {
    int fd;
    uint64_t sequence, sent_at;
};

static volatile sig_atomic_t interrupted;
static void on_signal(int signal_number) { (void)signal_number; interrupted = 1; }

static unsigned char fill(uint32_t flow, uint64_t sequence, size_t i) {
    return (unsigned char)((flow * 131u) ^ (uint32_t)(sequence * 31u) ^ (uint32_t)(i * 7u));
}

static void build(unsigned char *datagram, size_t size, uint32_t flow, uint64_t sequence) {
    memcpy(datagram, &flow, 4);
    memcpy(datagram + 4, &sequence, 8);
    for (size_t i = HEADER; i < size; i++) datagram[i] = fill(flow, sequence, i);
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: udpgen HOST PORT FLOWS SIZE SECONDS\n"); return 2; }
    const char *host = argv[1];
    int port = atoi(argv[2]), flows = atoi(argv[3]);
    size_t size = (size_t)atol(argv[4]);
    double seconds = atof(argv[5]);
    if (!is_loopback(host)) { fprintf(stderr, "udpgen: HOST must be a 127.x.x.x address\n"); return 2; }
    if (port <= 0 || port > 65535 || flows < 1 || size < HEADER || size > MAX_SIZE || seconds <= 0) {
        fprintf(stderr, "udpgen: need 0 < PORT < 65536, FLOWS >= 1, %d <= SIZE <= %d, SECONDS > 0\n", HEADER, MAX_SIZE);
        return 2;
    }
    const char *env = getenv("UDPGEN_LOSS_MS");
    uint64_t loss_ns = (uint64_t)((env ? atof(env) : 200) * 1e6);
    env = getenv("UDPGEN_WARMUP");
    double warmup = env ? atof(env) : 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    struct sockaddr_in server = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, host, &server.sin_addr);
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct flow *flow = calloc((size_t)flows, sizeof *flow);
    static unsigned char out[MAX_SIZE], in[MAX_SIZE + 1];
    static struct histogram latency;
    if (epoll_fd < 0 || flow == NULL) return 2;
    for (int i = 0; i < flows; i++) {
        flow[i].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (flow[i].fd < 0 || connect(flow[i].fd, (struct sockaddr *)&server, sizeof server) < 0) {
            perror("udpgen: socket");
            return 2;
        }
        struct epoll_event interest = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, flow[i].fd, &interest);
    }

    unsigned long long echoed = 0, lost = 0, corrupt = 0, stale = 0, errors = 0;
    uint64_t start = now_ns();
    uint64_t window_start = start + (uint64_t)(warmup * NS_PER_S);
    uint64_t window_end = window_start + (uint64_t)(seconds * NS_PER_S), last_scan = start;
    for (int i = 0; i < flows; i++) {
        build(out, size, (uint32_t)i, 0);
        flow[i].sent_at = now_ns();
        if (send(flow[i].fd, out, size, 0) < 0) errors++;
    }
    static struct epoll_event events[1024];
    uint64_t now = start;
    while (!interrupted && (now = now_ns()) < window_end) {
        int count = epoll_wait(epoll_fd, events, 1024, 10);
        now = now_ns();
        int in_window = now >= window_start && now < window_end;
        for (int e = 0; e < count; e++) {
            struct flow *f = &flow[events[e].data.u32];
            uint32_t id = events[e].data.u32;
            ssize_t n;
            while ((n = recv(f->fd, in, sizeof in, 0)) >= 0) {
                uint32_t got_flow;
                uint64_t got_sequence;
                memcpy(&got_flow, in, 4);
                memcpy(&got_sequence, in + 4, 8);
                if ((size_t)n != size || got_flow != id || got_sequence > f->sequence) { corrupt++; continue; }
                if (got_sequence < f->sequence) { stale++; continue; }
                size_t i = HEADER;
                while (i < size && in[i] == fill(id, got_sequence, i)) i++;
                if (i < size) { corrupt++; continue; }
                if (in_window) { echoed++; histogram_add(&latency, now - f->sent_at); }
                build(out, size, id, ++f->sequence);
                f->sent_at = now;
                if (send(f->fd, out, size, 0) < 0) errors++;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) errors++; /* ECONNREFUSED: nothing listens */
        }
        if (now - last_scan >= 10 * 1000000ull) { /* datagrams gone for good: count them, send the next */
            last_scan = now;
            for (int i = 0; i < flows; i++)
                if (now - flow[i].sent_at > loss_ns) {
                    if (in_window) lost++;
                    build(out, size, (uint32_t)i, ++flow[i].sequence);
                    flow[i].sent_at = now;
                    if (send(flow[i].fd, out, size, 0) < 0) errors++;
                }
        }
    }
    double window = now > window_start ? (double)(now - window_start) / NS_PER_S : 0;
    printf("udp: %d flows of %zu B, %.1f s window: %.0f datagrams/s echoed, p50 %.0f us, p99 %.0f us\n", flows,
           size, window, window > 0 ? echoed / window : 0, histogram_quantile(&latency, 0.5),
           histogram_quantile(&latency, 0.99));
    printf("RESULT mode=udp flows=%d size=%zu secs=%.1f rps=%.0f p50_us=%.1f p99_us=%.1f p999_us=%.1f lost=%llu "
           "corrupt=%llu stale=%llu errors=%llu\n",
           flows, size, window, window > 0 ? echoed / window : 0, histogram_quantile(&latency, 0.5),
           histogram_quantile(&latency, 0.99), histogram_quantile(&latency, 0.999), lost, corrupt, stale, errors);
    return corrupt == 0 ? 0 : 1;
}

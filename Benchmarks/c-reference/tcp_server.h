/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * tcp_server.h: the loop shared by echo_server.c and http_server.c, the C yardsticks the benchmarks
 * measure our servers beside. One thread, one level-triggered epoll set on 127.0.0.1:PORT:
 *   - the listening socket is nonblocking; accept4() until EAGAIN, TCP_NODELAY on each connection (the
 *     callgrind scripts count one setsockopt per accepted connection, as in our servers);
 *   - a readable connection gets one recv() of up to 64 KiB into a buffer shared by all connections, and
 *     the including file's `reply()` answers it with send(); what the kernel does not take is kept in a
 *     per-connection buffer and the connection waits for EPOLLOUT instead of EPOLLIN (back-pressure);
 *   - EOF or an error closes the connection.
 * No allocation on the steady path: the least CPU a server can spend per message on this kernel.
 * SIGINT or SIGTERM stops the loop and the process exits with status 0 (so valgrind writes its profile).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define IO_SIZE (64 * 1024)
#define EVENTS 1024

/* Per connection, indexed by descriptor: bytes the kernel would not take yet (NULL when none), and what the
 * including file's protocol remembers between reads. All of it is reset when the connection closes. */
struct pending {
    char *data;
    size_t length, offset;
    unsigned protocol_state;
};

static struct pending *pending_of;
static size_t pending_capacity;
static int epoll_fd;
static volatile sig_atomic_t stopping;
static char io_buffer[IO_SIZE];

static void on_stop(int signal_number) { (void)signal_number; stopping = 1; }

static void watch(int fd, uint32_t events, int op) {
    struct epoll_event ev = { .events = events, .data.fd = fd };
    if (epoll_ctl(epoll_fd, op, fd, &ev) < 0 && op != EPOLL_CTL_DEL) perror("epoll_ctl");
}

static void drop(int fd) {
    if ((size_t)fd < pending_capacity) {
        free(pending_of[fd].data);
        pending_of[fd] = (struct pending){ 0 };
    }
    close(fd); /* closing removes it from the epoll set */
}

/* Sends `length` bytes on `fd`; keeps the rest for EPOLLOUT. Returns -1 when the connection is gone. */
static int send_or_queue(int fd, const char *bytes, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = send(fd, bytes + done, length - done, MSG_NOSIGNAL);
        if (n > 0) { done += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        return -1;
    }
    if (done == length) return 0;
    if ((size_t)fd >= pending_capacity) return -1;
    struct pending *p = &pending_of[fd];
    p->data = malloc(length - done);
    if (p->data == NULL) return -1;
    memcpy(p->data, bytes + done, length - done);
    p->length = length - done;
    p->offset = 0;
    watch(fd, EPOLLOUT, EPOLL_CTL_MOD);
    return 0;
}

static int flush_pending(int fd) {
    struct pending *p = &pending_of[fd];
    while (p->offset < p->length) {
        ssize_t n = send(fd, p->data + p->offset, p->length - p->offset, MSG_NOSIGNAL);
        if (n > 0) { p->offset += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        return -1;
    }
    free(p->data);
    p->data = NULL;
    p->length = p->offset = 0;
    watch(fd, EPOLLIN, EPOLL_CTL_MOD);
    return 0;
}

/* Answers `length` bytes just received on `fd` (in io_buffer). Returns -1 to close the connection. */
static int reply(int fd, const char *received, size_t length);

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0) { perror("socket"); return -1; }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("bind"); return -1; }
    if (listen(fd, 4096) < 0) { perror("listen"); return -1; }
    return fd;
}

static int serve(const char *name, int argc, char **argv) {
    if (argc != 2 || atoi(argv[1]) <= 0 || atoi(argv[1]) > 65535) {
        fprintf(stderr, "usage: %s PORT      (listens on 127.0.0.1:PORT)\n", name);
        return 2;
    }
    int port = atoi(argv[1]);
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    pending_capacity = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (1u << 20) ? (1u << 20) : limit.rlim_cur;
    pending_of = calloc(pending_capacity, sizeof *pending_of);
    struct sigaction stop = { .sa_handler = on_stop };
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    int listener = listen_on(port);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (listener < 0 || epoll_fd < 0 || pending_of == NULL) return 1;
    watch(listener, EPOLLIN, EPOLL_CTL_ADD);
    printf("%s listening on 127.0.0.1:%d\n", name, port);
    fflush(stdout);

    static struct epoll_event events[EVENTS];
    while (!stopping) {
        int count = epoll_wait(epoll_fd, events, EVENTS, -1);
        if (count < 0) {
            if (errno == EINTR) continue;
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < count; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                for (;;) {
                    int connection = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (connection < 0) break; /* EAGAIN, or EMFILE: the next event retries */
                    int one = 1;
                    setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    watch(connection, EPOLLIN, EPOLL_CTL_ADD);
                }
                continue;
            }
            if (events[i].events & EPOLLOUT) {
                if (flush_pending(fd) < 0) drop(fd);
                continue;
            }
            ssize_t n = recv(fd, io_buffer, IO_SIZE, 0);
            if (n > 0) {
                if (reply(fd, io_buffer, (size_t)n) < 0) drop(fd);
            } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                drop(fd);
            }
        }
    }
    close(listener);
    return 0;
}

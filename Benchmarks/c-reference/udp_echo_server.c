/*
 * Copyright the EpollLoop authors.
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 * http://www.apache.org/licenses/LICENSE-2.0
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 *
 * udp_echo_server PORT [BATCH]: the C yardstick for UDP echo. One nonblocking UDP socket on 127.0.0.1:PORT
 * with 4 MiB SO_RCVBUF/SO_SNDBUF (as our example sets), one level-triggered epoll set; per wake-up,
 * recvmmsg() batches of up to BATCH (64) datagrams until the socket is empty, each batch sent straight back
 * to its senders with sendmmsg(). On SIGINT/SIGTERM it prints "udp_echo_server: N datagrams echoed" (the
 * callgrind script divides by it) and exits with status 0.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_BATCH 1024
#define MAX_DATAGRAM 65536

static volatile sig_atomic_t stopping;
static void on_stop(int signal_number) { (void)signal_number; stopping = 1; }

static char payload[MAX_BATCH][MAX_DATAGRAM];
static struct mmsghdr messages[MAX_BATCH];
static struct iovec vectors[MAX_BATCH];
static struct sockaddr_in senders[MAX_BATCH];

int main(int argc, char **argv) {
    int port = argc >= 2 ? atoi(argv[1]) : 0;
    int batch = argc >= 3 ? atoi(argv[2]) : 64;
    if (argc < 2 || argc > 3 || port <= 0 || port > 65535 || batch < 1 || batch > MAX_BATCH) {
        fprintf(stderr, "usage: udp_echo_server PORT [BATCH]      (BATCH 1-%d, default 64)\n", MAX_BATCH);
        return 2;
    }
    struct sigaction stop = { .sa_handler = on_stop };
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);

    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1, buffer = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("bind"); return 1; }
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event interest = { .events = EPOLLIN, .data.fd = fd };
    if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &interest) < 0) { perror("epoll"); return 1; }
    for (int i = 0; i < batch; i++) {
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = &senders[i];
    }
    printf("udp_echo_server listening on 127.0.0.1:%d (batch %d)\n", port, batch);
    fflush(stdout);

    unsigned long long echoed = 0;
    while (!stopping) {
        struct epoll_event event;
        if (epoll_wait(epoll_fd, &event, 1, -1) <= 0) continue; /* EINTR: check `stopping` */
        for (;;) {
            for (int i = 0; i < batch; i++) { /* the kernel overwrote these lengths in the last batch */
                vectors[i] = (struct iovec){ .iov_base = payload[i], .iov_len = MAX_DATAGRAM };
                messages[i].msg_hdr.msg_namelen = sizeof senders[i];
            }
            int received = recvmmsg(fd, messages, (unsigned)batch, MSG_DONTWAIT, NULL);
            if (received <= 0) break;
            for (int i = 0; i < received; i++) vectors[i].iov_len = messages[i].msg_len;
            int sent = 0;
            while (sent < received) {
                int n = sendmmsg(fd, messages + sent, (unsigned)(received - sent), 0);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break; /* a full send buffer drops the rest, as UDP may */
                sent += n;
            }
            echoed += (unsigned long long)received;
            if (received < batch) break;
        }
    }
    printf("udp_echo_server: %llu datagrams echoed\n", echoed);
    return 0;
}

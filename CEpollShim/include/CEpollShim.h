// CEpollShim: the few pieces of the Linux API that Swift cannot call directly or cleanly.
//
// Only what Swift cannot reach lives here: `struct epoll_event` (packed on x86_64, so its fields are read
// through accessors), flag-taking variants (`accept4`, `eventfd`), constants that are macros or enum members
// Swift imports awkwardly, errno, and thread naming/affinity. Everything else is called from Swift through
// the EpollLoop syscall seam. (CEpollShim.c also holds three forwarders to the Swift concurrency runtime,
// for the task's cancellation record and the current task, whose names Swift reserves; they are not
// declared here.)
#ifndef CEPOLL_SHIM_H
#define CEPOLL_SHIM_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

// MARK: epoll

/// Interest and readiness bits, as plain integers (the Glibc overlay imports them as an enum).
static const uint32_t CEPOLL_IN = EPOLLIN;
static const uint32_t CEPOLL_OUT = EPOLLOUT;
static const uint32_t CEPOLL_ERR = EPOLLERR;
static const uint32_t CEPOLL_HUP = EPOLLHUP;
static const uint32_t CEPOLL_RDHUP = EPOLLRDHUP;
static const uint32_t CEPOLL_ONESHOT = EPOLLONESHOT;
static const int CEPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int CEPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int CEPOLL_CTL_DEL = EPOLL_CTL_DEL;

/// `epoll_create1(EPOLL_CLOEXEC)`.
int cepoll_create(void);

/// `epoll_ctl` with the event built here, so Swift never lays out the packed struct itself.
int cepoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);

/// `epoll_wait` into a caller-owned array of `count` events.
int cepoll_wait(int epfd, struct epoll_event *events, int count, int timeout_ms);

/// The size of one `struct epoll_event` (12 bytes on x86_64, where it is packed; 16 elsewhere).
static inline size_t cepoll_event_size(void) { return sizeof(struct epoll_event); }

/// The readiness bits of `events[index]`.
static inline uint32_t cepoll_event_bits(const struct epoll_event *events, int index) {
    return events[index].events;
}

/// The user data of `events[index]`.
static inline uint64_t cepoll_event_data(const struct epoll_event *events, int index) {
    return events[index].data.u64;
}

// MARK: eventfd

/// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`.
int cepoll_eventfd(void);

// MARK: sockets

static const int CEPOLL_SOCK_STREAM = SOCK_STREAM;
static const int CEPOLL_SOCK_DGRAM = SOCK_DGRAM;
/// `SOCK_NONBLOCK | SOCK_CLOEXEC`, to or into a socket type.
static const int CEPOLL_SOCK_FLAGS = SOCK_NONBLOCK | SOCK_CLOEXEC;
/// Passed to every `send`/`sendmsg`: no SIGPIPE, ever.
static const int CEPOLL_MSG_NOSIGNAL = MSG_NOSIGNAL;

/// `socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol)`.
int cepoll_socket(int domain, int type, int protocol);

/// `accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC)`.
int cepoll_accept(int fd, struct sockaddr *addr, socklen_t *len);

// MARK: errno and threads

/// The calling thread's `errno`.
int cepoll_errno(void);

/// Sets the calling thread's `errno` (used by fault injection so injected failures look real).
void cepoll_set_errno(int value);

/// Names the calling thread (at most 15 bytes are kept by the kernel).
int cepoll_set_thread_name(const char *name);

/// Pins the calling thread to one CPU.
int cepoll_pin_thread_to_cpu(int cpu);

/// The number of CPUs in the calling thread's affinity mask (0 on failure).
int cepoll_affinity_cpu_count(void);

/// The number of the `index`-th CPU (from 0) in the calling thread's affinity mask, or -1.
int cepoll_affinity_cpu(int index);

/// `pipe2(fds, O_NONBLOCK | O_CLOEXEC)`.
int cepoll_pipe(int fds[2]);

/// The kernel's id of the calling thread.
int cepoll_gettid(void);

#endif

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "CEpollShim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <unistd.h>

#if defined(__x86_64__)
// The kernel's x86_64 ABI packs epoll_event: 4 bytes of events followed directly by 8 of data.
_Static_assert(sizeof(struct epoll_event) == 12, "epoll_event is packed on x86_64");
#else
_Static_assert(sizeof(struct epoll_event) == 16, "epoll_event is naturally aligned here");
#endif
_Static_assert(sizeof(((struct epoll_event *)0)->data) == 8, "epoll_data is 64 bits");
_Static_assert(sizeof(eventfd_t) == 8, "eventfd counts are 64 bits");

// The calls a loop makes on every event (the wait, a stream's recv and send, a datagram batch) go to the kernel
// as system calls of their own rather than through glibc's wrappers. Each wrapper is a pthread cancellation
// point: in a process with more than one thread it switches the thread's cancellation type on and off around
// the call, two atomic read-modify-writes on its cancel state and about 60 instructions per call (callgrind),
// for a feature nothing here uses (no thread of a loop is ever cancelled). Under AddressSanitizer or
// ThreadSanitizer the glibc calls stay: their interceptors check the buffers and see the descriptors
// synchronise, and they see only calls made through glibc.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CEPOLL_THROUGH_GLIBC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CEPOLL_THROUGH_GLIBC 1
#endif

// On x86_64 the calls that skip glibc's wrappers issue the `syscall` instruction inline. glibc's `syscall()` is a
// function of its own that shuffles seven arguments into place first: 11 of the 27 instructions the shim's
// recv or send took, the rest being `cepoll_recv`'s own (callgrind, loadtest echo). As `syscall()` does, a
// result in [-4095, -1] is a negated errno: stored in `errno`, and -1 returned.
#if !defined(CEPOLL_THROUGH_GLIBC) && defined(__x86_64__)
static inline long cepoll_syscall6(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    long result;
    __asm__ volatile("syscall"
                     : "=a"(result)
                     : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if ((unsigned long)result > -4096UL) {
        errno = (int)-result;
        return -1;
    }
    return result;
}
#define CEPOLL_SYSCALL6(n, a1, a2, a3, a4, a5, a6) \
    cepoll_syscall6((n), (long)(a1), (long)(a2), (long)(a3), (long)(a4), (long)(a5), (long)(a6))
#else
#define CEPOLL_SYSCALL6(n, a1, a2, a3, a4, a5, a6) syscall((n), (a1), (a2), (a3), (a4), (a5), (a6))
#endif

int cepoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cepoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int cepoll_wait(int epfd, struct epoll_event *events, int count, int timeout_ms) {
#ifdef CEPOLL_THROUGH_GLIBC
    return epoll_wait(epfd, events, count, timeout_ms);
#else
    // epoll_pwait with no signal mask is epoll_wait, and is the call every architecture has.
    return (int)CEPOLL_SYSCALL6(SYS_epoll_pwait, epfd, events, count, timeout_ms, NULL, 0);
#endif
}

ssize_t cepoll_recv(int fd, void *buffer, size_t length, int flags) {
#ifdef CEPOLL_THROUGH_GLIBC
    return recv(fd, buffer, length, flags);
#else
    return CEPOLL_SYSCALL6(SYS_recvfrom, fd, buffer, length, flags, NULL, NULL);
#endif
}

ssize_t cepoll_send(int fd, const void *buffer, size_t length, int flags) {
#ifdef CEPOLL_THROUGH_GLIBC
    return send(fd, buffer, length, flags);
#else
    return CEPOLL_SYSCALL6(SYS_sendto, fd, buffer, length, flags, NULL, 0);
#endif
}

ssize_t cepoll_sendmsg(int fd, const struct msghdr *message, int flags) {
#ifdef CEPOLL_THROUGH_GLIBC
    return sendmsg(fd, message, flags);
#else
    return CEPOLL_SYSCALL6(SYS_sendmsg, fd, message, flags, 0, 0, 0);
#endif
}

int cepoll_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int cepoll_socket(int domain, int type, int protocol) {
    return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
}

int cepoll_accept(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int cepoll_errno(void) { return errno; }

void cepoll_set_errno(int value) { errno = value; }

int cepoll_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }

int cepoll_pin_thread_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int cepoll_affinity_cpu_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}

int cepoll_affinity_cpu(int index) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (index < 0 || sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set) && index-- == 0) return cpu;
    }
    return -1;
}

int cepoll_pipe(int fds[2]) { return pipe2(fds, O_NONBLOCK | O_CLOEXEC); }

int cepoll_gettid(void) { return gettid(); }

// MARK: Swift concurrency runtime

// The task's cancellation record, for `withCancellationHandler` in LoopSocket. Swift reserves the runtime's
// `swift_` names (the compiler rejects a direct `@_silgen_name` reference to them), so these forward to the
// runtime entry points that the standard library's own `withTaskCancellationHandler` calls. Both sides use
// the Swift calling convention: a Swift closure `() -> Void` is passed as (function, context), exactly the
// runtime's (handler, context) pair. Not in the header: Swift declares them with `@_silgen_name`.
#define CEPOLL_SWIFTCC __attribute__((swiftcall))

extern CEPOLL_SWIFTCC void *swift_task_addCancellationHandler(void *handler, void *context);
extern CEPOLL_SWIFTCC void swift_task_removeCancellationHandler(void *record);

CEPOLL_SWIFTCC void *cepoll_task_add_cancellation_handler(void *handler, void *context) {
    return swift_task_addCancellationHandler(handler, context);
}

CEPOLL_SWIFTCC void cepoll_task_remove_cancellation_handler(void *record) {
    swift_task_removeCancellationHandler(record);
}

// The running task, for `executeThenClose`'s read scope in LoopSocket: compared by address, never
// dereferenced. `withUnsafeCurrentTask` gives the same answer through a generic closure and a retain and
// release of the task: about 320 more instructions per read (callgrind, async-echo-server).
extern CEPOLL_SWIFTCC void *swift_task_getCurrent(void);

CEPOLL_SWIFTCC void *cepoll_task_current(void) {
    return swift_task_getCurrent();
}

// Whether a task (the running one, from `cepoll_task_current`) is cancelled, for `AsyncSocket`'s reads:
// `Task.checkCancellation()` looks the running task up again and costs about 100 instructions a read where
// this costs 30 (callgrind, async-echo-server).
extern CEPOLL_SWIFTCC _Bool swift_task_isCancelled(void *task);

CEPOLL_SWIFTCC _Bool cepoll_task_is_cancelled(void *task) {
    return swift_task_isCancelled(task);
}

// The slow half of `cepoll_tsan_acquire_current_task`, reached only when ThreadSanitizer's runtime is linked.
void cepoll_tsan_acquire_current_task_slow(void) {
    void *task = swift_task_getCurrent();
    if (task != NULL) __tsan_acquire(task);
}

// MARK: datagrams (GCDAsyncUdpSocket)

_Static_assert(sizeof(cepoll_mmsghdr) == sizeof(struct mmsghdr), "cepoll_mmsghdr has mmsghdr's layout");
_Static_assert(offsetof(cepoll_mmsghdr, msg_len) == offsetof(struct mmsghdr, msg_len), "msg_len at mmsghdr's offset");

int cepoll_recvmmsg(int fd, cepoll_mmsghdr *msgs, unsigned int count, int flags) {
#ifdef CEPOLL_THROUGH_GLIBC
    return recvmmsg(fd, (struct mmsghdr *)msgs, count, flags, NULL);
#else
    return (int)CEPOLL_SYSCALL6(SYS_recvmmsg, fd, msgs, count, flags, NULL, 0);
#endif
}

int cepoll_sendmmsg(int fd, cepoll_mmsghdr *msgs, unsigned int count, int flags) {
#ifdef CEPOLL_THROUGH_GLIBC
    return sendmmsg(fd, (struct mmsghdr *)msgs, count, flags | MSG_NOSIGNAL);
#else
    return (int)CEPOLL_SYSCALL6(SYS_sendmmsg, fd, msgs, count, flags | MSG_NOSIGNAL, 0, 0);
#endif
}

_Static_assert(CMSG_SPACE(sizeof(uint16_t)) <= CEPOLL_UDP_CONTROL_SPACE, "UDP_SEGMENT cmsg fits");
_Static_assert(CMSG_SPACE(sizeof(int)) <= CEPOLL_UDP_CONTROL_SPACE, "UDP_GRO cmsg fits");

void cepoll_set_udp_segment(struct msghdr *header, void *control, uint16_t segment) {
    header->msg_control = control;
    header->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(header);
    cmsg->cmsg_level = CEPOLL_SOL_UDP;
    cmsg->cmsg_type = CEPOLL_UDP_SEGMENT;
    cmsg->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    memcpy(CMSG_DATA(cmsg), &segment, sizeof(segment));
}

int cepoll_udp_gro_segment(const struct msghdr *header) {
    if (header->msg_controllen == 0) return 0;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(header); cmsg != NULL; cmsg = CMSG_NXTHDR((struct msghdr *)header, cmsg)) {
        if (cmsg->cmsg_level == CEPOLL_SOL_UDP && cmsg->cmsg_type == CEPOLL_UDP_GRO && cmsg->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int segment;
            memcpy(&segment, CMSG_DATA(cmsg), sizeof(segment));
            return segment;
        }
    }
    return 0;
}

// MARK: the 4-byte lock (see the header)

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(cepoll_lock_t), "the lock word is a plain uint32_t");

void cepoll_lock(cepoll_lock_t *lock) {
    _Atomic uint32_t *word = (_Atomic uint32_t *)lock;
    uint32_t state = 0;
    if (atomic_compare_exchange_strong_explicit(word, &state, 1, memory_order_acquire, memory_order_relaxed)) {
        return;
    }
    // Contended: mark the lock as having waiters (2) and sleep until an unlock finds it free for us.
    if (state != 2) state = atomic_exchange_explicit(word, 2, memory_order_acquire);
    while (state != 0) {
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        state = atomic_exchange_explicit(word, 2, memory_order_acquire);
    }
}

void cepoll_unlock(cepoll_lock_t *lock) {
    _Atomic uint32_t *word = (_Atomic uint32_t *)lock;
    if (atomic_exchange_explicit(word, 0, memory_order_release) == 2) {
        syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

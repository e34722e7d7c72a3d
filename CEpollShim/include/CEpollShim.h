// CEpollShim: the few pieces of the Linux API that Swift cannot call directly or cleanly.
//
// Only what Swift cannot reach lives here: `struct epoll_event` (packed on x86_64, so its fields are read
// through accessors), flag-taking variants (`accept4`, `eventfd`), the calls a loop makes on every event as
// system calls of their own (glibc's are cancellation points), constants that are macros or enum members
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

/// `epoll_wait` into a caller-owned array of `count` events: a system call of its own, not glibc's
/// cancellation point (as are `cepoll_recv`, `cepoll_send`, `cepoll_sendmsg` and the datagram batches; see
/// CEpollShim.c).
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

/// `recv(2)`, as a system call of its own (no cancellation point).
ssize_t cepoll_recv(int fd, void *buffer, size_t length, int flags);

/// `send(2)`, as a system call of its own (no cancellation point).
ssize_t cepoll_send(int fd, const void *buffer, size_t length, int flags);

/// `sendmsg(2)`, as a system call of its own (no cancellation point).
ssize_t cepoll_sendmsg(int fd, const struct msghdr *message, int flags);

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

// MARK: the C allocator

#include <malloc.h>

/// Bytes glibc's malloc holds free in all its arenas: freed by the program, kept by the allocator
/// (`mallinfo2().fordblks`; it walks the arenas under their locks, microseconds).
static inline size_t cepoll_malloc_free_bytes(void) { return mallinfo2().fordblks; }

/// `malloc_trim(0)`: gives the whole free pages inside every arena back to the kernel. 1 if any were.
static inline int cepoll_malloc_trim(void) { return malloc_trim(0); }

// MARK: a 4-byte lock

/// A mutex in one `uint32_t` (0 unlocked, 1 locked, 2 locked with waiters), for `Locked`: a connection holds
/// one, and glibc's `pthread_mutex_t` is 40 bytes. The algorithm is glibc's own low-level lock (Drepper,
/// "Futexes Are Tricky", mutex 3): one compare-and-swap to lock and one exchange to unlock when uncontended,
/// a private futex wait/wake when contended. Its atomics live here in C, not in Swift, so that a
/// ThreadSanitizer build (which compiles this file with `-fsanitize=thread` too) sees their acquire/release
/// ordering; it cannot see that of `Synchronization.Mutex`, whose atomics are in the uninstrumented stdlib.
/// Not recursive; not robust; initialise to 0.
typedef uint32_t cepoll_lock_t;

/// Acquires `lock`, sleeping on a futex while another thread holds it.
void cepoll_lock(cepoll_lock_t *lock);

/// Releases `lock`, waking one waiter if there are any.
void cepoll_unlock(cepoll_lock_t *lock);

// MARK: datagrams (GCDAsyncUdpSocket)
//
// Swift's Glibc module is not built with _GNU_SOURCE, so `struct mmsghdr`, `recvmmsg` and `sendmmsg` are not
// visible to it: `cepoll_mmsghdr` has the kernel's layout (checked in CEpollShim.c) and the two calls forward.

#include <netinet/in.h>

/// `struct mmsghdr`: one message of a `recvmmsg`/`sendmmsg` batch and the bytes it moved.
typedef struct cepoll_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
} cepoll_mmsghdr;

/// `MSG_TRUNC`: in a received message's `msg_flags`, the datagram was longer than the buffer.
static const int CEPOLL_MSG_TRUNC = MSG_TRUNC;
/// `MSG_DONTWAIT`.
static const int CEPOLL_MSG_DONTWAIT = MSG_DONTWAIT;
/// Multicast and broadcast options (macros or enum members in the Glibc overlay).
static const int CEPOLL_IP_ADD_MEMBERSHIP = IP_ADD_MEMBERSHIP;
static const int CEPOLL_IP_DROP_MEMBERSHIP = IP_DROP_MEMBERSHIP;
static const int CEPOLL_IP_MULTICAST_IF = IP_MULTICAST_IF;
static const int CEPOLL_IP_MULTICAST_LOOP = IP_MULTICAST_LOOP;
static const int CEPOLL_IPV6_JOIN_GROUP = IPV6_JOIN_GROUP;
static const int CEPOLL_IPV6_LEAVE_GROUP = IPV6_LEAVE_GROUP;
static const int CEPOLL_IPV6_MULTICAST_IF = IPV6_MULTICAST_IF;
static const int CEPOLL_SO_BROADCAST = SO_BROADCAST;
static const int CEPOLL_SO_REUSEPORT = SO_REUSEPORT;
static const int CEPOLL_SO_REUSEADDR = SO_REUSEADDR;
/// `SOL_UDP` / `UDP_SEGMENT`: the GSO option (Linux 4.18); set per socket or per message in a cmsg.
static const int CEPOLL_SOL_UDP = 17;
static const int CEPOLL_UDP_SEGMENT = 103;
/// `UDP_GRO` (Linux 5.0): receive runs of datagrams coalesced into one buffer, with their size in a cmsg.
static const int CEPOLL_UDP_GRO = 104;
/// Control bytes one message needs for its `UDP_SEGMENT` (sending) or `UDP_GRO` (receiving) cmsg.
#define CEPOLL_UDP_CONTROL_SPACE 32

/// Writes a `UDP_SEGMENT` cmsg of `segment` bytes into `control` (CEPOLL_UDP_CONTROL_SPACE bytes, 8-aligned)
/// and points `header` at it.
void cepoll_set_udp_segment(struct msghdr *header, void *control, uint16_t segment);

/// The segment size in a received message's `UDP_GRO` cmsg: the size of each datagram coalesced into it
/// (the last may be shorter); 0 if the message carries none (one datagram).
int cepoll_udp_gro_segment(const struct msghdr *header);

/// `recvmmsg(fd, msgs, count, flags, NULL)`.
int cepoll_recvmmsg(int fd, cepoll_mmsghdr *msgs, unsigned int count, int flags);

/// `sendmmsg(fd, msgs, count, flags | MSG_NOSIGNAL)`.
int cepoll_sendmmsg(int fd, cepoll_mmsghdr *msgs, unsigned int count, int flags);

/// The slots of a loop's socket counters (`EventLoop.socketCounters`, `SocketCounts` in Swift).
enum {
    CEPOLL_STREAM_OPENED, CEPOLL_STREAM_CLOSED, CEPOLL_STREAM_ACCEPTED, CEPOLL_STREAM_CONNECTED,
    CEPOLL_STREAM_BYTES_IN, CEPOLL_STREAM_BYTES_OUT,
    CEPOLL_DATAGRAM_OPENED, CEPOLL_DATAGRAM_CLOSED, CEPOLL_DATAGRAMS_IN, CEPOLL_DATAGRAMS_OUT,
    CEPOLL_DATAGRAM_BYTES_IN, CEPOLL_DATAGRAM_BYTES_OUT,
    CEPOLL_TLS_HANDSHAKES, CEPOLL_TLS_FAILURES,
    CEPOLL_COUNTER_SLOTS
};

/// Adds `amount` to a counter only one thread writes and any thread reads: a relaxed atomic load and store,
/// two plain moves on x86-64 with no locked instruction, and inlined into the Swift caller (a Swift method
/// across modules was a call). Readers use `cepoll_counter_load`.
static inline void cepoll_counter_add(uint64_t *counters, int slot, uint64_t amount) {
    __atomic_store_n(&counters[slot], __atomic_load_n(&counters[slot], __ATOMIC_RELAXED) + amount, __ATOMIC_RELAXED);
}

/// A counter's value, from any thread.
static inline uint64_t cepoll_counter_load(const uint64_t *counters, int slot) {
    return __atomic_load_n(&counters[slot], __ATOMIC_RELAXED);
}

// MARK: ThreadSanitizer hand-off annotations
//
// A value made on a loop thread reaches a task through a continuation's resume, whose ordering lives in the
// Swift concurrency runtime: not built with ThreadSanitizer, so the sanitizer cannot see it and reports the
// task's first use of the value as a race. The library therefore releases the resumed task's address before
// every resume and acquires it where its own code continues after the await.
//
// Whether the process runs under ThreadSanitizer is known only at run time here: the Swift compiler's C
// importer does not see `-fsanitize=thread` (`__has_feature(thread_sanitizer)` is false in these inline
// functions even in a sanitizer build). So the sanitizer's entry points are weak references: null, and the
// annotations a not-taken branch, unless the sanitizer's runtime is linked in.

extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

/// Acquires the running task's address, under ThreadSanitizer (defined in CEpollShim.c).
void cepoll_tsan_acquire_current_task_slow(void);

/// Under ThreadSanitizer, publishes this thread's writes so far to whoever acquires `task` next: called with
/// a continuation's task just before resuming it. Otherwise nothing.
static inline void cepoll_tsan_release(const void *task) {
    if (__builtin_expect(__tsan_release != 0, 0)) __tsan_release((void *)task);
}

/// Under ThreadSanitizer, makes the writes released for the running task visible to it: called by the task
/// right after a continuation resumed it. Otherwise nothing.
static inline void cepoll_tsan_acquire_current_task(void) {
    if (__builtin_expect(__tsan_acquire != 0, 0)) cepoll_tsan_acquire_current_task_slow();
}

#endif

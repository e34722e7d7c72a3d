// A malloc counter for AllocationCounterTests, preloaded (LD_PRELOAD) into the example servers and loadtest.
// The test compiles it at run time (cc -shared -fPIC -O2) rather than linking it anywhere: the sanitizer
// builds of the suite intercept malloc themselves.
//
// In those builds (AddressSanitizer, ThreadSanitizer) the sanitizer's runtime is linked into the executable
// and its malloc comes first, so the functions below are never called: the constructor installs the
// runtime's own hooks instead (__sanitizer_install_malloc_and_free_hooks, weak here, so a plain build finds
// it null), which count the same allocations and frees into the same page.
//
// Every allocating call (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc)
// adds one to counts[0], every free of a non-null pointer one to counts[1]: relaxed atomics, as only the totals
// matter. The counts live in a page of the file named by ALLOC_COUNTER_FILE, mapped shared, so the test reads
// them from its own mapping at any moment, with no signal or protocol in the measured process. Until the
// constructor has mapped it (and without the variable) they go to a static pair nobody reads.
//
// The real functions are found with dlsym(RTLD_NEXT); dlsym itself may call calloc before they are known, so
// calls made while resolving are served from a small static bump buffer, whose blocks free ignores.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void (*real_free)(void *);

static uint64_t early_counts[2];
static uint64_t *counts = early_counts;

// Served while dlsym runs; never freed. Blocks 16-byte aligned, as malloc's are.
static _Alignas(16) unsigned char bootstrap[8192];
static size_t bootstrap_used;
static int resolving;

static int from_bootstrap(const void *p) {
    return (const unsigned char *)p >= bootstrap && (const unsigned char *)p < bootstrap + sizeof bootstrap;
}

static void *bootstrap_alloc(size_t size) {
    size_t rounded = (size + 15) & ~(size_t)15;
    if (rounded > sizeof bootstrap - bootstrap_used) return NULL;
    void *p = bootstrap + bootstrap_used;
    bootstrap_used += rounded;
    memset(p, 0, size);  // calloc's contract; the buffer starts zeroed, this keeps it so
    return p;
}

static void resolve(void) {
    if (real_free) return;
    resolving = 1;
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    real_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    resolving = 0;
}

static void count(int which) { __atomic_fetch_add(&__atomic_load_n(&counts, __ATOMIC_RELAXED)[which], 1, __ATOMIC_RELAXED); }
static void count_allocation(void) { count(0); }
static void count_free(void) { count(1); }

extern int __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void *, size_t),
                                                     void (*)(const volatile void *)) __attribute__((weak));
static void sanitizer_allocated(const volatile void *p, size_t size) { (void)p; (void)size; count_allocation(); }
static void sanitizer_freed(const volatile void *p) { if (p) count_free(); }

__attribute__((constructor)) static void map_counts(void) {
    resolve();
    const char *path = getenv("ALLOC_COUNTER_FILE");
    if (!path || !*path) return;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (page != MAP_FAILED) __atomic_store_n(&counts, (uint64_t *)page, __ATOMIC_RELEASE);
    if (__sanitizer_install_malloc_and_free_hooks)
        __sanitizer_install_malloc_and_free_hooks(sanitizer_allocated, sanitizer_freed);
}

void *malloc(size_t size) {
    if (!real_malloc) {
        if (resolving) return bootstrap_alloc(size);
        resolve();
    }
    count_allocation();
    return real_malloc(size);
}

void *calloc(size_t n, size_t size) {
    if (!real_calloc) {
        if (resolving) return n && size > SIZE_MAX / n ? NULL : bootstrap_alloc(n * size);
        resolve();
    }
    count_allocation();
    return real_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    if (!real_realloc) {
        if (resolving) return NULL;
        resolve();
    }
    if (from_bootstrap(p)) {
        // A block dlsym got during bootstrap, grown later: copy it out (its size is unknown: at most the rest
        // of the buffer, and the new block is at least `size`).
        void *moved = malloc(size);
        if (moved) {
            size_t available = (size_t)(bootstrap + sizeof bootstrap - (unsigned char *)p);
            memcpy(moved, p, size < available ? size : available);
        }
        return moved;
    }
    count_allocation();
    return real_realloc(p, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    resolve();
    count_allocation();
    return real_posix_memalign(out, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    resolve();
    count_allocation();
    return real_aligned_alloc(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    resolve();
    count_allocation();
    return real_memalign(alignment, size);
}

void *valloc(size_t size) {
    resolve();
    count_allocation();
    return real_valloc(size);
}

void *pvalloc(size_t size) {
    resolve();
    count_allocation();
    return real_pvalloc(size);
}

void free(void *p) {
    if (!p || from_bootstrap(p)) return;
    if (!real_free) resolve();
    count_free();
    real_free(p);
}

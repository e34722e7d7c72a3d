#ifndef C_MALLOC_STATS_H
#define C_MALLOC_STATS_H

#include <stddef.h>

/// Bytes the allocator has handed out and not yet taken back, over all arenas and threads
/// (glibc's mallinfo2: uordblks + hblkhd). Not in Swift's Glibc module, hence this shim.
size_t cms_allocated_bytes(void);

#endif

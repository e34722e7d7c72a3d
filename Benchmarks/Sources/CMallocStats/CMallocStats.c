#include "CMallocStats.h"

#include <malloc.h>

size_t cms_allocated_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

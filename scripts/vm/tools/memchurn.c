/* memchurn MIB [SECONDS]: allocate MIB mebibytes and write a word into every page of it, pass
 * after pass, for SECONDS (default: until killed). Under a memory.max below MIB with swap (the
 * lane's zram), every pass makes the kernel swap pages out and back in: reclaim (memory.stat
 * pgscan) and memory pressure (memory.pressure `full`) that last as long as it runs, which is
 * what systemd-oomd's pressure path acts on (memhog touches each page once, and without swap the
 * kernel cannot reclaim it at all). Each page gets a word of its own, so zram cannot store it as
 * a same-filled page. Prints its progress every 8 passes. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 128;
    long secs = argc > 2 ? atol(argv[2]) : 0;
    size_t page = 4096, size = (size_t)mib << 20;
    if (mib <= 0) {
        fprintf(stderr, "memchurn: MIB must be a positive number of mebibytes\n");
        return 2;
    }
    volatile char *p = malloc(size);
    if (!p) {
        printf("memchurn: malloc of %ld MiB failed\n", mib);
        return 2;
    }
    time_t end = secs > 0 ? time(NULL) + secs : 0;
    for (unsigned long pass = 1;; pass++) {
        for (size_t off = 0; off < size; off += page)
            *(volatile unsigned long *)(p + off) = pass * size + off;
        if (pass % 8 == 1) {
            printf("memchurn: %ld MiB, pass %lu\n", mib, pass);
            fflush(stdout);
        }
        if (end && time(NULL) >= end)
            break;
    }
    printf("memchurn: done\n");
    return 0;
}

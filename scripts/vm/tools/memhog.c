/* memhog MIB: allocate and touch MIB mebibytes, one at a time, so that a module's memory.max is
 * exceeded by anonymous memory the kernel cannot reclaim (the guest has no swap).
 * Exits 0 after touching everything; under a smaller memory.max the OOM killer ends it first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 256;
    for (long i = 1; i <= mib; i++) {
        char *p = malloc(1 << 20);
        if (!p) {
            printf("memhog: malloc failed at %ld MiB\n", i);
            return 2;
        }
        memset(p, 0xa5, 1 << 20);
        if (i % 16 == 0) {
            printf("memhog: touched %ld MiB\n", i);
            fflush(stdout);
        }
    }
    printf("memhog: touched all %ld MiB\n", mib);
    return 0;
}

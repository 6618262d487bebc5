/* memhog MIB [hold]: allocate and touch MIB mebibytes, one at a time, so that a module's
 * memory.max is exceeded by anonymous memory the kernel cannot reclaim (the guest has no swap).
 * Exits 0 after touching everything, or with `hold` keeps it until killed; under a smaller
 * memory.max the OOM killer ends it first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    fflush(stdout);
    if (argc > 2 && strcmp(argv[2], "hold") == 0)
        for (;;)
            pause();
    return 0;
}

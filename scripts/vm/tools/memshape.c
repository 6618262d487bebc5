/* memshape MODE CYCLES BUSY_MS IDLE_MS MIB: a module's memory over cycles of work and rest, in
 * one of three shapes, for recording the series the hoard alert is tested on
 * (packaging/prometheus/recorded/). Each cycle is a busy phase of BUSY_MS (one CPU spinning, the
 * work done in units paced over the phase) and an idle phase of IDLE_MS (asleep).
 *
 *   churn     allocates and frees many small blocks per unit of work and keeps a scattered few,
 *             so glibc's heap fragments: what the module holds grows with its work (about MIB per
 *             busy phase) and is not given back when the work stops, since the kept blocks pin
 *             the heap (seed 003: "arena fragmentation, churn-bound growth")
 *   workload  a working set that grows with the work to MIB in each busy phase, in blocks glibc
 *             maps on their own, all freed when the work stops: memory follows work. Each unit
 *             of work also reads a page of each of the next 16 blocks, round the set, so every
 *             page of it is touched within about 20 units while it works (a working set, which
 *             the multi-gen LRU sees as hot)
 *   cache     fills MIB in its first busy phase and holds it, reading it in later ones
 *
 * Prints `memshape: cycle N busy|idle` at each phase, unbuffered, and `memshape: done` after
 * CYCLES cycles; then holds what it has, asleep, until it is killed (so that what the last trough
 * kept can still be read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long rng = 88172645463325252UL;
static unsigned long next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

#define LIVE 4096
#define BIG (256 << 10)

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: memshape churn|workload|cache CYCLES BUSY_MS IDLE_MS MIB\n");
        return 2;
    }
    const char *mode = argv[1];
    long cycles = atol(argv[2]), busy = atol(argv[3]), idle = atol(argv[4]), mib = atol(argv[5]);
    int churn = !strcmp(mode, "churn"), workload = !strcmp(mode, "workload"),
        cache = !strcmp(mode, "cache");
    if (!(churn || workload || cache) || cycles <= 0 || busy <= 0 || idle < 0 || mib <= 0) {
        fprintf(stderr, "memshape: bad arguments (MODE churn, workload or cache; numbers > 0)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    /* churn: a unit replaces 8 live blocks of 32 to 4096 bytes (2 KiB on average) and keeps one
     * of them for good, so MIB per phase takes MIB * 1024 / 2 units (kept blocks average 2 KiB). */
    long units = churn ? mib * 512 : mib * 4; /* workload, cache: one 256 KiB block a unit */
    static char *live[LIVE];
    char **big = calloc((size_t)units * (size_t)cycles + 1, sizeof(char *));
    if (!big) {
        fprintf(stderr, "memshape: out of memory\n");
        return 1;
    }
    long nbig = 0;
    for (long c = 1; c <= cycles; c++) {
        printf("memshape: cycle %ld busy\n", c);
        double start = now(), end = start + busy / 1000.0;
        for (long u = 0; u < units; u++) {
            /* Pace the units over the phase; spin (one CPU busy) while ahead. */
            while (now() < start + (end - start) * u / units) {
            }
            if (churn) {
                for (int i = 0; i < 8; i++) {
                    int slot = next() % LIVE;
                    free(live[slot]);
                    size_t n = 32 + next() % 4065;
                    live[slot] = malloc(n);
                    if (!live[slot])
                        return 1;
                    memset(live[slot], (int)u, n);
                }
                /* Keep one for good: a scattered block the heap cannot give back below. */
                int slot = next() % LIVE;
                live[slot] = NULL;
            } else if (workload || (cache && c == 1)) {
                char *p = malloc(BIG);
                if (!p)
                    return 1;
                memset(p, (int)u + 1, BIG);
                big[nbig++] = p;
                if (workload) {
                    /* Work on the set: every page of the next 16 blocks, round it. */
                    static long sweep;
                    volatile char sum = 0;
                    for (int b = 0; b < 16; b++, sweep++)
                        for (long i = 0; i < BIG; i += 4096)
                            sum += big[sweep % nbig][i];
                }
            } else {
                volatile char sum = 0;
                for (long i = 0; i < BIG; i += 4096)
                    sum += big[u % nbig][i];
            }
        }
        while (now() < end) {
        }
        printf("memshape: cycle %ld idle\n", c);
        if (workload) {
            for (long i = 0; i < nbig; i++)
                free(big[i]);
            nbig = 0;
        }
        if (churn) {
            /* The work's own live blocks end with the work; the kept ones stay. */
            for (int i = 0; i < LIVE; i++) {
                free(live[i]);
                live[i] = NULL;
            }
        }
        sleep_ms(idle);
    }
    printf("memshape: done\n");
    for (;;)
        pause();
}

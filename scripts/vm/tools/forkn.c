/* forkn N: try to fork N children that each wait in pause(), report every attempt, then wait in
 * pause() too, so that the whole tree stays in its cgroup for the caller to inspect and kill.
 * Output (flushed line by line):  "fork I ok PID" | "fork I failed ERRNO-TEXT", then
 * "forkn: ok=K failed=F". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 8, ok = 0, failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i <= n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        if (pid < 0) {
            printf("fork %d failed %s\n", i, strerror(errno));
            failed++;
        } else {
            printf("fork %d ok %d\n", i, (int)pid);
            ok++;
        }
    }
    printf("forkn: ok=%d failed=%d\n", ok, failed);
    for (;;)
        pause();
}

/* peakrss CMD [ARG...]: run CMD (stdout to /dev/null) and print "<ru_maxrss KiB> <wait status>"
 * of it on stdout. The guest bench (benches/vm/) measures the helper's peak RSS through it:
 * CMD is forked from this small static process, so its ru_maxrss starts from this process's
 * few pages, not from the bench's (a child spawned straight from the bench inherits the bench's
 * high-water mark: vfork's shared mm at execve, fork's copied RSS). wait4 keeps the peak across
 * CMD's own execve and includes the children CMD reaped. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: peakrss CMD [ARG...]\n");
        return 2;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("peakrss: fork");
        return 1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1);
        execvp(argv[1], argv + 1);
        perror("peakrss: exec");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) {
        perror("peakrss: wait4");
        return 1;
    }
    printf("%ld %d\n", ru.ru_maxrss, status);
    return 0;
}

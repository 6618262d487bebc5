/* cgxattr DIR NAME: print the extended attribute NAME of DIR (a cgroup directory: systemd-oomd's
 * user.oomd_omit, user.oomd_ooms, user.oomd_kill) and a newline; print nothing and exit 1 when
 * DIR has no such attribute (or it cannot be read; the reason goes to stderr). The guest root has
 * no getfattr, and python3 takes seconds to start under TCG. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

int main(int argc, char **argv) {
    char buf[256];
    if (argc != 3) {
        fprintf(stderr, "usage: cgxattr DIR NAME\n");
        return 2;
    }
    ssize_t n = getxattr(argv[1], argv[2], buf, sizeof buf - 1);
    if (n < 0) {
        if (errno != ENODATA)
            fprintf(stderr, "cgxattr: %s %s: %s\n", argv[1], argv[2], strerror(errno));
        return 1;
    }
    buf[n] = 0;
    printf("%s\n", buf);
    return 0;
}

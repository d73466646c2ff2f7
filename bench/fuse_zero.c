/* A FUSE server that does no work: every lookup is answered "absent" at once. What a lookup
 * through it costs is what any FUSE server pays for the round trip through the kernel on this
 * machine (bench/native_requests.py times it). Root only: it mounts with mount(2).
 *
 *     fuse_zero MOUNTPOINT [CPU]
 *
 * Ends when the mount is unmounted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/uio.h>
#include <unistd.h>

static int dev;

static void reply(uint64_t unique, int error, const void *out, size_t size) {
    struct fuse_out_header head = {.len = sizeof head + size, .error = error, .unique = unique};
    struct iovec iov[2] = {{&head, sizeof head}, {(void *)out, size}};
    if (writev(dev, iov, out ? 2 : 1) < 0 && errno != ENOENT)
        perror("writev");
}

static void answer(const struct fuse_in_header *in) {
    switch (in->opcode) {
    case FUSE_INIT: {
        const struct fuse_init_in *init = (const void *)(in + 1);
        struct fuse_init_out out = {.major = FUSE_KERNEL_VERSION, .minor = 31,
                                    .max_readahead = init->max_readahead, .max_write = 65536,
                                    .max_background = 16, .congestion_threshold = 12, .time_gran = 1};
        reply(in->unique, 0, &out, sizeof out);
        break;
    }
    case FUSE_GETATTR: { /* the root, the only node */
        struct fuse_attr_out out = {.attr_valid = 60, .attr = {.ino = 1, .mode = 040755, .nlink = 2}};
        reply(in->unique, 0, &out, sizeof out);
        break;
    }
    case FUSE_LOOKUP: { /* absent (node 0), not kept by the kernel: each stat asks */
        struct fuse_entry_out out = {0};
        reply(in->unique, 0, &out, sizeof out);
        break;
    }
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
        break;
    default:
        reply(in->unique, -ENOSYS, NULL, 0);
    }
}

int main(int argc, char **argv) {
    static char request[(1 << 20) + 4096];
    char options[128];
    if (argc < 2) {
        fprintf(stderr, "usage: fuse_zero MOUNTPOINT [CPU]\n");
        return 2;
    }
    if (argc > 2) {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(atoi(argv[2]), &cpus);
        sched_setaffinity(0, sizeof cpus, &cpus);
    }
    dev = open("/dev/fuse", O_RDWR);
    snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=0,group_id=0", dev);
    if (dev < 0 || mount("fuse_zero", argv[1], "fuse.fuse_zero", MS_NOSUID | MS_NODEV, options)) {
        perror("fuse_zero");
        return 1;
    }
    for (;;) {
        if (read(dev, request, sizeof request) < 0) {
            if (errno == ENODEV) /* unmounted */
                return 0;
            if (errno == EINTR || errno == ENOENT)
                continue;
            perror("read");
            return 1;
        }
        answer((const struct fuse_in_header *)request);
    }
}

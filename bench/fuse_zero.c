/* A FUSE server that does no work: every lookup is answered "absent" at once. What a lookup
 * through it costs is what any FUSE server pays for the round trip through the kernel on this
 * machine (bench/native_requests.py times it). Root only: it mounts with mount(2).
 *
 *     fuse_zero MOUNTPOINT [CPU]    through /dev/fuse, on that CPU if given
 *     fuse_zero MOUNTPOINT uring    over FUSE's io_uring transport: a queue per CPU, each
 *                                   served by a thread on that CPU, so a request is answered
 *                                   where its caller runs (needs the fuse module's enable_uring)
 *
 * Ends when the mount is unmounted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int dev;
static int uring; /* serve over io_uring */

static void reply(uint64_t unique, int error, const void *out, size_t size) {
    struct fuse_out_header head = {.len = sizeof head + size, .error = error, .unique = unique};
    struct iovec iov[2] = {{&head, sizeof head}, {(void *)out, size}};
    if (writev(dev, iov, out ? 2 : 1) < 0 && errno != ENOENT)
        perror("writev");
}

/* The kernel's io_uring interface for FUSE (include/uapi/linux/fuse.h since 6.14); Debian 12's
 * headers predate it. */
#define FUSE_OVER_IO_URING_FLAGS2 (1u << (41 - 32))
#define IN_OUT_SIZE 128
enum { CMD_REGISTER = 1, CMD_COMMIT_AND_FETCH = 2 };
struct ent_in_out {
    uint64_t flags, commit_id;
    uint32_t payload_sz, padding;
    uint64_t reserved;
};
struct req_header {
    char in_out[IN_OUT_SIZE], op_in[IN_OUT_SIZE];
    struct ent_in_out ent;
};
struct cmd_req {
    uint64_t flags, commit_id;
    uint16_t qid;
    uint8_t padding[6];
};

#define DEPTH 2                /* entries registered per queue */
#define PAYLOAD (1u << 20)     /* at least the kernel's max payload (max_pages * page size) */

struct entry {
    struct req_header head;
    char payload[PAYLOAD];
    struct iovec iov[2];
};

struct ring { /* one io_uring of 128-byte SQEs */
    int fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    unsigned pending;
};

static void ring_init(struct ring *r) {
    struct io_uring_params p = {.flags = IORING_SETUP_SQE128};
    r->fd = syscall(__NR_io_uring_setup, 2 * DEPTH, &p);
    if (r->fd < 0) {
        perror("io_uring_setup");
        exit(1);
    }
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    size_t size = sq_size > cq_size ? sq_size : cq_size; /* one mapping (IORING_FEAT_SINGLE_MMAP) */
    char *sq = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    r->sqes = mmap(0, p.sq_entries * 128, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                   IORING_OFF_SQES);
    r->sq_head = (unsigned *)(sq + p.sq_off.head);
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(sq + p.cq_off.head);
    r->cq_tail = (unsigned *)(sq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
    r->pending = 0;
}

static void submit_cmd(struct ring *r, int op, struct entry *e, uint16_t qid, uint64_t commit_id) {
    unsigned tail = *r->sq_tail, index = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = (struct io_uring_sqe *)((char *)r->sqes + 128 * index);
    memset(sqe, 0, 128);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = dev;
    sqe->cmd_op = op;
    sqe->user_data = (uint64_t)(uintptr_t)e;
    if (op == CMD_REGISTER) {
        sqe->addr = (uint64_t)(uintptr_t)e->iov;
        sqe->len = 2;
    }
    struct cmd_req *cmd = (struct cmd_req *)sqe->cmd;
    cmd->qid = qid;
    cmd->commit_id = commit_id;
    r->sq_array[index] = index;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    r->pending++;
}

static void answer_entry(struct entry *e) {
    const struct fuse_in_header *in = (const void *)e->head.in_out;
    struct fuse_out_header *out = (void *)e->head.in_out;
    uint64_t unique = in->unique;
    uint32_t size = 0;
    int error = 0;
    if (in->opcode == FUSE_LOOKUP) { /* absent, not kept by the kernel */
        memset(e->payload, 0, sizeof(struct fuse_entry_out));
        size = sizeof(struct fuse_entry_out);
    } else if (in->opcode == FUSE_GETATTR) {
        struct fuse_attr_out attr = {.attr_valid = 60, .attr = {.ino = 1, .mode = 040755, .nlink = 2}};
        memcpy(e->payload, &attr, sizeof attr);
        size = sizeof attr;
    } else {
        error = -ENOSYS;
    }
    memset(out, 0, sizeof *out);
    out->unique = unique, out->error = error, out->len = sizeof *out + size;
    e->head.ent.payload_sz = size;
}

static void *serve_queue(void *arg) {
    uint16_t qid = (uint16_t)(uintptr_t)arg;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(qid, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);
    struct ring r;
    ring_init(&r);
    for (int i = 0; i < DEPTH; i++) {
        struct entry *e = aligned_alloc(4096, sizeof *e);
        memset(&e->head, 0, sizeof e->head);
        e->iov[0] = (struct iovec){&e->head, sizeof e->head};
        e->iov[1] = (struct iovec){e->payload, PAYLOAD};
        submit_cmd(&r, CMD_REGISTER, e, qid, 0);
    }
    for (;;) {
        int got = syscall(__NR_io_uring_enter, r.fd, r.pending, 1, IORING_ENTER_GETEVENTS, NULL, 0);
        if (got < 0 && errno != EINTR) {
            perror("io_uring_enter");
            return NULL;
        }
        r.pending = 0;
        unsigned head = *r.cq_head;
        while (head != __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE)) {
            struct io_uring_cqe *cqe = &r.cqes[head & *r.cq_mask];
            struct entry *e = (struct entry *)(uintptr_t)cqe->user_data;
            if (cqe->res < 0) /* unmounted (or refused): this queue is done */
                return NULL;
            uint64_t commit_id = e->head.ent.commit_id;
            answer_entry(e);
            submit_cmd(&r, CMD_COMMIT_AND_FETCH, e, qid, commit_id);
            head++;
        }
        __atomic_store_n(r.cq_head, head, __ATOMIC_RELEASE);
    }
}

static void answer(const struct fuse_in_header *in) {
    switch (in->opcode) {
    case FUSE_INIT: {
        const struct fuse_init_in *init = (const void *)(in + 1);
        struct fuse_init_out out = {.major = FUSE_KERNEL_VERSION, .minor = 42,
                                    .max_readahead = init->max_readahead, .max_write = 65536,
                                    .max_background = 16, .congestion_threshold = 12, .time_gran = 1};
        if (uring)
            out.flags = FUSE_INIT_EXT, out.flags2 = FUSE_OVER_IO_URING_FLAGS2;
        reply(in->unique, 0, &out, sizeof out);
        for (long q = 0; uring && q < sysconf(_SC_NPROCESSORS_CONF); q++) {
            pthread_t thread;
            pthread_create(&thread, NULL, serve_queue, (void *)(uintptr_t)q);
            pthread_detach(thread);
        }
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
        fprintf(stderr, "usage: fuse_zero MOUNTPOINT [CPU | uring]\n");
        return 2;
    }
    uring = argc > 2 && strcmp(argv[2], "uring") == 0;
    if (argc > 2 && !uring) {
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

// The part of rdma-core 44's libibverbs ABI that the emulated NIC does not
// implement: each function exists, with the exact name and version node of
// rdma-core (see libibverbs.map), and fails the way libibverbs fails when the
// provider lacks the operation.  It never pretends to succeed.
//
// Why export what we do not implement: binaries bind to libibverbs by symbol
// and version, and perftest is linked with BIND_NOW, so one missing name stops
// ib_write_bw from loading at all, even if it would never call that verb.
// Likewise librdmacm, libmlx5 and libefa, which perftest pulls in, import the
// IBVERBS_PRIVATE_34 provider interface.
//
// Failure conventions, as in rdma-core 44 (verbs.h, and the dummy ops that
// libibverbs installs for operations a provider leaves out):
//   - int verbs return the errno value EOPNOTSUPP (errno is left alone);
//   - pointer verbs return NULL and set errno = EOPNOTSUPP;
//   - the few verbs documented as "-1 and errno" return -1, errno = EOPNOTSUPP;
//   - void verbs that release something do nothing: nothing was ever handed out.
// Each deviation from those is commented where it happens.
//
// The verbs the library does implement (the list in implemented_symbols.txt)
// live in verbs.cpp and must not be defined here; their IBVERBS_1.0 compat
// versions are here, because the 1.0 ABI's structs differ from 1.1's and
// nothing in rocefab produces them.

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

// Types of rdma-core's driver.h, which Debian does not install.  Only
// pointers to them cross the ABI, so incomplete declarations are enough.
struct verbs_device_ops;
struct verbs_sysfs_dev;
struct verbs_mr;
struct verbs_xrcd;
struct verbs_qp;
struct verbs_cq;
struct verbs_srq;
struct verbs_flow_action;
struct verbs_dm;
struct verbs_counters;
struct ibv_command_buffer;

static void* fail_null_eopnotsupp() {
    errno = EOPNOTSUPP;
    return nullptr;
}

static int fail_minus_one(int error) {
    errno = error;
    return -1;
}

extern "C" {

// ---------------------------------------------------------------------------
// IBVERBS_1.0 defaults: historical kernel-ABI helpers and sysfs access.

// The three *_from_kern/_to_kern copies are void, so they cannot say
// "unsupported"; they are plain field copies between the kernel uAPI structs
// and the verbs structs, so they are implemented (librdmacm and old ibacm
// builds still call them).

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src) {
    std::memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
    dst->grh.flow_label = src->grh.flow_label;
    dst->grh.sgid_index = src->grh.sgid_index;
    dst->grh.hop_limit = src->grh.hop_limit;
    dst->grh.traffic_class = src->grh.traffic_class;
    dst->dlid = src->dlid;
    dst->sl = src->sl;
    dst->src_path_bits = src->src_path_bits;
    dst->static_rate = src->static_rate;
    dst->is_global = src->is_global;
    dst->port_num = src->port_num;
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src) {
    dst->qp_state = static_cast<ibv_qp_state>(src->qp_state);
    dst->cur_qp_state = static_cast<ibv_qp_state>(src->cur_qp_state);
    dst->path_mtu = static_cast<ibv_mtu>(src->path_mtu);
    dst->path_mig_state = static_cast<ibv_mig_state>(src->path_mig_state);
    dst->qkey = src->qkey;
    dst->rq_psn = src->rq_psn;
    dst->sq_psn = src->sq_psn;
    dst->dest_qp_num = src->dest_qp_num;
    dst->qp_access_flags = src->qp_access_flags;

    dst->cap.max_send_wr = src->max_send_wr;
    dst->cap.max_recv_wr = src->max_recv_wr;
    dst->cap.max_send_sge = src->max_send_sge;
    dst->cap.max_recv_sge = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;

    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);

    dst->pkey_index = src->pkey_index;
    dst->alt_pkey_index = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining = src->sq_draining;
    dst->max_rd_atomic = src->max_rd_atomic;
    dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
    dst->min_rnr_timer = src->min_rnr_timer;
    dst->port_num = src->port_num;
    dst->timeout = src->timeout;
    dst->retry_cnt = src->retry_cnt;
    dst->rnr_retry = src->rnr_retry;
    dst->alt_port_num = src->alt_port_num;
    dst->alt_timeout = src->alt_timeout;
}

// Both sides keep the on-the-wire fields (LIDs, P_Key, flow label) in network
// order, so those copy unchanged.
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src) {
    std::memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
    std::memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = static_cast<int>(src->raw_traffic);
    dst->flow_label = src->flow_label;
    dst->reversible = static_cast<int>(src->reversible);
    dst->mtu = static_cast<uint8_t>(src->mtu);
    dst->pkey = src->pkey;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->numb_path = src->numb_path;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src) {
    std::memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
    std::memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = static_cast<uint32_t>(src->raw_traffic);
    dst->flow_label = src->flow_label;
    dst->reversible = static_cast<uint32_t>(src->reversible);
    dst->mtu = src->mtu;
    dst->pkey = src->pkey;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->numb_path = src->numb_path;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

// Where sysfs is, as rdma-core 44 answers (libibverbs/sysfs.c): $SYSFS_PATH without its
// trailing slashes when the caller is not set-uid, else "/sys".  Inside `rocefab run` the
// emulated devices are under /sys/class/infiniband and /sys/class/infiniband_verbs (the
// program's own mount namespace); outside it, reads there fail with ENOENT, as on a machine
// without the device.
const char* ibv_get_sysfs_path(void) {
    static const char* path;
    if (path) return path;
    const char* env = getuid() == geteuid() ? getenv("SYSFS_PATH") : nullptr;
    if (env) {
        size_t length = strlen(env);
        while (length > 1 && env[length - 1] == '/') --length;
        if (char* copy = strndup(env, length)) path = copy;
    }
    if (!path) path = "/sys";
    return path;
}

// rdma-core 44's: the file's contents without its trailing newline; -1 and errno when it
// cannot be opened or read, or does not fit.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= static_cast<int>(sizeof path))
        return fail_minus_one(ENAMETOOLONG);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t length = read(fd, buf, size);
    const int error = errno;
    close(fd);
    if (length < 0) {
        errno = error;
        return -1;
    }
    if (length > 0) {
        if (buf[length - 1] == '\n')
            buf[--length] = '\0';
        else if (static_cast<size_t>(length) < size)
            buf[length] = '\0';
        else
            return fail_minus_one(EOVERFLOW);
    }
    return static_cast<int>(length);
}

// ---------------------------------------------------------------------------
// IBVERBS_1.1 defaults the emulated NIC does not offer yet: they fail as a provider without them does.

int ibv_attach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) { return EOPNOTSUPP; }

int ibv_detach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) { return EOPNOTSUPP; }

int ibv_resize_cq(struct ibv_cq*, int) { return EOPNOTSUPP; }

// ibv_rereg_mr returns an ibv_rereg_mr_err_code, not an errno value.
// rdma-core turns a provider's "unsupported" into IBV_REREG_MR_ERR_CMD, which
// tells the caller the MR is no longer usable; here nothing was touched and
// the MR stays valid, which is what IBV_REREG_MR_ERR_INPUT says.
int ibv_rereg_mr(struct ibv_mr*, int, struct ibv_pd*, void*, size_t, int) {
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}

// Returns a negative errno value (rdma-core returns -EINVAL / -EHOSTUNREACH):
// there is no kernel neighbour table behind an emulated port to ask.
int ibv_resolve_eth_l2_from_gid(struct ibv_context*, struct ibv_ah_attr*, uint8_t[ETHERNET_LL_SIZE], uint16_t*) {
    errno = EOPNOTSUPP;
    return -EOPNOTSUPP;
}

// ---------------------------------------------------------------------------
// IBVERBS_1.6 .. 1.14 defaults.

// Import/unimport shares objects between processes through a kernel uverbs
// file descriptor; emulated devices have none.
struct ibv_context* ibv_import_device(int) {
    return static_cast<ibv_context*>(fail_null_eopnotsupp());
}

struct ibv_pd* ibv_import_pd(struct ibv_context*, uint32_t) {
    return static_cast<ibv_pd*>(fail_null_eopnotsupp());
}

struct ibv_mr* ibv_import_mr(struct ibv_pd*, uint32_t) {
    return static_cast<ibv_mr*>(fail_null_eopnotsupp());
}

struct ibv_dm* ibv_import_dm(struct ibv_context*, uint32_t) {
    return static_cast<ibv_dm*>(fail_null_eopnotsupp());
}

// Nothing can have been imported, so there is nothing to release.
void ibv_unimport_pd(struct ibv_pd*) {}
void ibv_unimport_mr(struct ibv_mr*) {}
void ibv_unimport_dm(struct ibv_dm*) {}

int ibv_query_ece(struct ibv_qp*, struct ibv_ece*) { return EOPNOTSUPP; }

int ibv_set_ece(struct ibv_qp*, struct ibv_ece*) { return EOPNOTSUPP; }

struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    return static_cast<ibv_mr*>(fail_null_eopnotsupp());
}

// Not an error-returning verb: 0 means "data is not guaranteed to land in
// order", the safe answer (and rdma-core's answer when the provider cannot
// tell); claiming 1 would let an application skip its ordering fences.
int ibv_query_qp_data_in_order(struct ibv_qp*, enum ibv_wr_opcode, uint32_t) { return 0; }

// ---------------------------------------------------------------------------
// IBVERBS_1.0 / 1.1 compat (non-default) versions.  Only binaries linked
// against libibverbs 1.0 (before 2006) bind to these; they take the 1.0
// structs, which rocefab never hands out, so every one of them fails.

void** ibv_get_device_list_v1_0(int* num_devices) {
    if (num_devices) *num_devices = 0;
    return static_cast<void**>(fail_null_eopnotsupp());
}
__asm__(".symver ibv_get_device_list_v1_0, ibv_get_device_list@IBVERBS_1.0");

void ibv_free_device_list_v1_0(void**) {}
__asm__(".symver ibv_free_device_list_v1_0, ibv_free_device_list@IBVERBS_1.0");

const char* ibv_get_device_name_v1_0(void*) { return static_cast<const char*>(fail_null_eopnotsupp()); }
__asm__(".symver ibv_get_device_name_v1_0, ibv_get_device_name@IBVERBS_1.0");

// A GUID is a value, not a status: 0 is the "no GUID" that rdma-core also
// returns when it cannot read one.
__be64 ibv_get_device_guid_v1_0(void*) {
    errno = EOPNOTSUPP;
    return 0;
}
__asm__(".symver ibv_get_device_guid_v1_0, ibv_get_device_guid@IBVERBS_1.0");

void* ibv_open_device_v1_0(void*) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_open_device_v1_0, ibv_open_device@IBVERBS_1.0");

// ibv_close_device is documented as "0 or -1".
int ibv_close_device_v1_0(void*) { return fail_minus_one(EOPNOTSUPP); }
__asm__(".symver ibv_close_device_v1_0, ibv_close_device@IBVERBS_1.0");

// The event channels are read()s: -1 and errno, as documented.
int ibv_get_async_event_v1_0(void*, struct ibv_async_event*) { return fail_minus_one(EOPNOTSUPP); }
__asm__(".symver ibv_get_async_event_v1_0, ibv_get_async_event@IBVERBS_1.0");

void ibv_ack_async_event_v1_0(struct ibv_async_event*) {}
__asm__(".symver ibv_ack_async_event_v1_0, ibv_ack_async_event@IBVERBS_1.0");

int ibv_query_device_v1_0(void*, struct ibv_device_attr*) { return EOPNOTSUPP; }
__asm__(".symver ibv_query_device_v1_0, ibv_query_device@IBVERBS_1.0");

int ibv_query_port_v1_0(void*, uint8_t, struct ibv_port_attr*) { return EOPNOTSUPP; }
__asm__(".symver ibv_query_port_v1_0, ibv_query_port@IBVERBS_1.0");

// ibv_query_gid and ibv_query_pkey are documented as "0 or -1".
int ibv_query_gid_v1_0(void*, uint8_t, int, union ibv_gid*) { return fail_minus_one(EOPNOTSUPP); }
__asm__(".symver ibv_query_gid_v1_0, ibv_query_gid@IBVERBS_1.0");

int ibv_query_pkey_v1_0(void*, uint8_t, int, __be16*) { return fail_minus_one(EOPNOTSUPP); }
__asm__(".symver ibv_query_pkey_v1_0, ibv_query_pkey@IBVERBS_1.0");

void* ibv_alloc_pd_v1_0(void*) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_alloc_pd_v1_0, ibv_alloc_pd@IBVERBS_1.0");

int ibv_dealloc_pd_v1_0(void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_dealloc_pd_v1_0, ibv_dealloc_pd@IBVERBS_1.0");

void* ibv_reg_mr_v1_0(void*, void*, size_t, int) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_reg_mr_v1_0, ibv_reg_mr@IBVERBS_1.0");

int ibv_dereg_mr_v1_0(void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_dereg_mr_v1_0, ibv_dereg_mr@IBVERBS_1.0");

void* ibv_create_cq_v1_0(void*, int, void*, struct ibv_comp_channel*, int) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_create_cq_v1_0, ibv_create_cq@IBVERBS_1.0");

int ibv_resize_cq_v1_0(void*, int) { return EOPNOTSUPP; }
__asm__(".symver ibv_resize_cq_v1_0, ibv_resize_cq@IBVERBS_1.0");

int ibv_destroy_cq_v1_0(void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_destroy_cq_v1_0, ibv_destroy_cq@IBVERBS_1.0");

int ibv_get_cq_event_v1_0(struct ibv_comp_channel*, void**, void**) { return fail_minus_one(EOPNOTSUPP); }
__asm__(".symver ibv_get_cq_event_v1_0, ibv_get_cq_event@IBVERBS_1.0");

void ibv_ack_cq_events_v1_0(void*, unsigned int) {}
__asm__(".symver ibv_ack_cq_events_v1_0, ibv_ack_cq_events@IBVERBS_1.0");

void* ibv_create_srq_v1_0(void*, struct ibv_srq_init_attr*) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_create_srq_v1_0, ibv_create_srq@IBVERBS_1.0");

int ibv_modify_srq_v1_0(void*, struct ibv_srq_attr*, int) { return EOPNOTSUPP; }
__asm__(".symver ibv_modify_srq_v1_0, ibv_modify_srq@IBVERBS_1.0");

int ibv_query_srq_v1_0(void*, struct ibv_srq_attr*) { return EOPNOTSUPP; }
__asm__(".symver ibv_query_srq_v1_0, ibv_query_srq@IBVERBS_1.0");

int ibv_destroy_srq_v1_0(void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_destroy_srq_v1_0, ibv_destroy_srq@IBVERBS_1.0");

void* ibv_create_qp_v1_0(void*, void*) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_create_qp_v1_0, ibv_create_qp@IBVERBS_1.0");

int ibv_query_qp_v1_0(void*, struct ibv_qp_attr*, int, void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_query_qp_v1_0, ibv_query_qp@IBVERBS_1.0");

int ibv_modify_qp_v1_0(void*, struct ibv_qp_attr*, int) { return EOPNOTSUPP; }
__asm__(".symver ibv_modify_qp_v1_0, ibv_modify_qp@IBVERBS_1.0");

int ibv_destroy_qp_v1_0(void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_destroy_qp_v1_0, ibv_destroy_qp@IBVERBS_1.0");

void* ibv_create_ah_v1_0(void*, struct ibv_ah_attr*) { return fail_null_eopnotsupp(); }
__asm__(".symver ibv_create_ah_v1_0, ibv_create_ah@IBVERBS_1.0");

int ibv_destroy_ah_v1_0(void*) { return EOPNOTSUPP; }
__asm__(".symver ibv_destroy_ah_v1_0, ibv_destroy_ah@IBVERBS_1.0");

int ibv_attach_mcast_v1_0(void*, union ibv_gid*, uint16_t) { return EOPNOTSUPP; }
__asm__(".symver ibv_attach_mcast_v1_0, ibv_attach_mcast@IBVERBS_1.0");

int ibv_detach_mcast_v1_0(void*, union ibv_gid*, uint16_t) { return EOPNOTSUPP; }
__asm__(".symver ibv_detach_mcast_v1_0, ibv_detach_mcast@IBVERBS_1.0");

// The pre-2017 provider registration hook, kept by rdma-core only so that
// very old providers still resolve at load time; rdma-core ignores the
// registration too.
void ibv_register_driver_v1_1(const char*, void*) {}
__asm__(".symver ibv_register_driver_v1_1, ibv_register_driver@IBVERBS_1.1");

// ---------------------------------------------------------------------------
// IBVERBS_PRIVATE_34: the interface between libibverbs and its providers.
//
// rocefab's library is itself the only "provider": it never scans
// /sys/class/infiniband, never dlopens libmlx5-rdmav34.so and friends, and
// never calls a provider's alloc_context.  So nothing below is ever reached
// through a device of ours; the functions exist because provider libraries
// that an application links directly (perftest links libmlx5 and libefa) import
// them and run a constructor at load time.

// Called by every provider's constructor.  Accepting and ignoring the
// registration is the honest answer: the provider would drive real hardware
// through /dev/infiniband, which emulated devices do not have, so it must
// never be offered one.  Keeping no pointer also means a provider that is
// dlclose()d later leaves nothing dangling.
void verbs_register_driver_34(const struct verbs_device_ops*) {}

// rdma-core's switch letting destroy verbs succeed after a device was hot
// unplugged.  No kernel device can disappear under us; kept as a plain
// variable so that programs which set it keep linking.
bool verbs_allow_disassociate_destroy = false;

// Logging for providers; goes to stderr only when VERBS_LOG_LEVEL asks for
// that level (1 error, 2 warning, 3 info, 4 debug), as in rdma-core.
// rdma-core's VERBS_LOG_FILE is not honoured.
void __verbs_log(struct verbs_context*, uint32_t level, const char* fmt, ...) {
    static const unsigned long wanted_level = [] {
        const char* env = std::getenv("VERBS_LOG_LEVEL");
        return env ? std::strtoul(env, nullptr, 0) : 0UL;
    }();
    if (level == 0 || level > wanted_level) return;
    const int saved_errno = errno; // callers log errors, then return errno
    va_list args;
    va_start(args, fmt);
    std::vfprintf(stderr, fmt, args);
    va_end(args);
    errno = saved_errno;
}

// Sizes a provider's on-stack ioctl buffer.  A size is not a status, so it
// is computed for real.  The layout is rdma-core 44's ibv_command_buffer
// (cmd_ioctl.h, not installed): three pointers, a handful of byte-sized fields,
// then the ioctl header whose attrs[] the links fill; frozen by the
// IBVERBS_PRIVATE_34 node like everything else here.
struct command_buffer_prefix {
    command_buffer_prefix* next;
    struct ib_uverbs_attr* next_attr;
    struct ib_uverbs_attr* last_attr;
    uint8_t small_fields[5];
    struct ib_uverbs_ioctl_hdr hdr;
};
static_assert(offsetof(command_buffer_prefix, hdr) == 32, "rdma-core 44 ibv_command_buffer layout");

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer* link) {
    for (auto* cur = reinterpret_cast<command_buffer_prefix*>(link); cur; cur = cur->next)
        num_attrs += static_cast<unsigned int>(cur->next_attr - cur->hdr.attrs);
    return num_attrs;
}

// Every provider command ends here; there is no uverbs file descriptor.
int execute_ioctl(struct ibv_context*, struct ibv_command_buffer*) { return EOPNOTSUPP; }

void* _verbs_init_and_alloc_context(struct ibv_device*, int, size_t, struct verbs_context*, uint32_t) {
    return fail_null_eopnotsupp();
}

struct ibv_context* verbs_open_device(struct ibv_device*, void*) {
    return static_cast<ibv_context*>(fail_null_eopnotsupp());
}

// Only a context from _verbs_init_and_alloc_context (which always fails) can
// be passed to these two, so there is nothing to set up or tear down.
void verbs_set_ops(struct verbs_context*, const void*) {}
void verbs_uninit_context(struct verbs_context*) {}

// A provider calls this on a CQ it just built; it initialises only fields of
// the public struct ibv_cq, so it is implemented as rdma-core defines it,
// including the reference the CQ holds on its completion channel.
void verbs_init_cq(struct ibv_cq* cq, struct ibv_context* context, struct ibv_comp_channel* channel, void* cq_context) {
    cq->context = context;
    cq->channel = channel;
    if (channel) {
        pthread_mutex_lock(&context->mutex);
        ++channel->refcnt;
        pthread_mutex_unlock(&context->mutex);
    }
    cq->cq_context = cq_context;
    cq->comp_events_completed = 0;
    cq->async_events_completed = 0;
    pthread_mutex_init(&cq->mutex, nullptr);
    pthread_cond_init(&cq->cond, nullptr);
}

// sysfs reads for a provider's device: see ibv_read_sysfs_file.
int ibv_read_ibdev_sysfs_file(char*, size_t, struct verbs_sysfs_dev*, const char*, ...) {
    return fail_minus_one(ENOENT);
}

// The ibv_cmd_* family marshals a verb into a uverbs command for the kernel.
// They return errno values, except ibv_cmd_poll_cq (a poll: -1 and errno).
// Command and response buffers are rdma-core's kern-abi.h structs; their
// layout does not matter here, so they are opaque.
int ibv_cmd_get_context(struct verbs_context*, void*, size_t, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_query_context(struct ibv_context*, struct ibv_command_buffer*) { return EOPNOTSUPP; }
int ibv_cmd_query_device_any(struct ibv_context*, const struct ibv_query_device_ex_input*, struct ibv_device_attr_ex*,
                             size_t, void*, size_t*) {
    return EOPNOTSUPP;
}
int ibv_cmd_query_port(struct ibv_context*, uint8_t, struct ibv_port_attr*, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_alloc_pd(struct ibv_context*, struct ibv_pd*, void*, size_t, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_dealloc_pd(struct ibv_pd*) { return EOPNOTSUPP; }
int ibv_cmd_open_xrcd(struct ibv_context*, struct verbs_xrcd*, int, struct ibv_xrcd_init_attr*, void*, size_t, void*,
                      size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_close_xrcd(struct verbs_xrcd*) { return EOPNOTSUPP; }
int ibv_cmd_reg_mr(struct ibv_pd*, void*, size_t, uint64_t, int, struct verbs_mr*, void*, size_t, void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_rereg_mr(struct verbs_mr*, uint32_t, void*, size_t, uint64_t, int, struct ibv_pd*, void*, size_t, void*,
                     size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_dereg_mr(struct verbs_mr*) { return EOPNOTSUPP; }
int ibv_cmd_query_mr(struct ibv_pd*, struct verbs_mr*, uint32_t) { return EOPNOTSUPP; }
int ibv_cmd_advise_mr(struct ibv_pd*, enum ibv_advise_mr_advice, uint32_t, struct ibv_sge*, uint32_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int, struct verbs_mr*) { return EOPNOTSUPP; }
int ibv_cmd_alloc_mw(struct ibv_pd*, enum ibv_mw_type, struct ibv_mw*, void*, size_t, void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_dealloc_mw(struct ibv_mw*) { return EOPNOTSUPP; }
int ibv_cmd_create_cq(struct ibv_context*, int, struct ibv_comp_channel*, int, struct ibv_cq*, void*, size_t, void*,
                      size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_create_cq_ex(struct ibv_context*, const struct ibv_cq_init_attr_ex*, struct verbs_cq*, void*, size_t, void*,
                         size_t, uint32_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_poll_cq(struct ibv_cq*, int, struct ibv_wc*) { return fail_minus_one(EOPNOTSUPP); }
int ibv_cmd_req_notify_cq(struct ibv_cq*, int) { return EOPNOTSUPP; }
int ibv_cmd_resize_cq(struct ibv_cq*, int, void*, size_t, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_destroy_cq(struct ibv_cq*) { return EOPNOTSUPP; }
int ibv_cmd_modify_cq(struct ibv_cq*, struct ibv_modify_cq_attr*, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_create_srq(struct ibv_pd*, struct ibv_srq*, struct ibv_srq_init_attr*, void*, size_t, void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_create_srq_ex(struct ibv_context*, struct verbs_srq*, struct ibv_srq_init_attr_ex*, void*, size_t, void*,
                          size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_modify_srq(struct ibv_srq*, struct ibv_srq_attr*, int, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_query_srq(struct ibv_srq*, struct ibv_srq_attr*, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_destroy_srq(struct ibv_srq*) { return EOPNOTSUPP; }
int ibv_cmd_create_qp(struct ibv_pd*, struct ibv_qp*, struct ibv_qp_init_attr*, void*, size_t, void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_create_qp_ex(struct ibv_context*, struct verbs_qp*, struct ibv_qp_init_attr_ex*, void*, size_t, void*,
                         size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_create_qp_ex2(struct ibv_context*, struct verbs_qp*, struct ibv_qp_init_attr_ex*, void*, size_t, void*,
                          size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_open_qp(struct ibv_context*, struct verbs_qp*, int, struct ibv_qp_open_attr*, void*, size_t, void*,
                    size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_query_qp(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_qp_init_attr*, void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_modify_qp(struct ibv_qp*, struct ibv_qp_attr*, int, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_modify_qp_ex(struct ibv_qp*, struct ibv_qp_attr*, int, void*, size_t, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_destroy_qp(struct ibv_qp*) { return EOPNOTSUPP; }
int ibv_cmd_post_send(struct ibv_qp*, struct ibv_send_wr*, struct ibv_send_wr**) { return EOPNOTSUPP; }
int ibv_cmd_post_recv(struct ibv_qp*, struct ibv_recv_wr*, struct ibv_recv_wr**) { return EOPNOTSUPP; }
int ibv_cmd_post_srq_recv(struct ibv_srq*, struct ibv_recv_wr*, struct ibv_recv_wr**) { return EOPNOTSUPP; }
int ibv_cmd_create_ah(struct ibv_pd*, struct ibv_ah*, struct ibv_ah_attr*, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_destroy_ah(struct ibv_ah*) { return EOPNOTSUPP; }
int ibv_cmd_attach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) { return EOPNOTSUPP; }
int ibv_cmd_detach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) { return EOPNOTSUPP; }
int ibv_cmd_create_flow(struct ibv_qp*, struct ibv_flow*, struct ibv_flow_attr*, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_destroy_flow(struct ibv_flow*) { return EOPNOTSUPP; }
int ibv_cmd_create_flow_action_esp(struct ibv_context*, struct ibv_flow_action_esp_attr*, struct verbs_flow_action*,
                                   struct ibv_command_buffer*) {
    return EOPNOTSUPP;
}
int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action*, struct ibv_flow_action_esp_attr*,
                                   struct ibv_command_buffer*) {
    return EOPNOTSUPP;
}
int ibv_cmd_destroy_flow_action(struct verbs_flow_action*) { return EOPNOTSUPP; }
int ibv_cmd_create_wq(struct ibv_context*, struct ibv_wq_init_attr*, struct ibv_wq*, void*, size_t, void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_modify_wq(struct ibv_wq*, struct ibv_wq_attr*, void*, size_t) { return EOPNOTSUPP; }
int ibv_cmd_destroy_wq(struct ibv_wq*) { return EOPNOTSUPP; }
int ibv_cmd_create_rwq_ind_table(struct ibv_context*, struct ibv_rwq_ind_table_init_attr*, struct ibv_rwq_ind_table*,
                                 void*, size_t) {
    return EOPNOTSUPP;
}
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table*) { return EOPNOTSUPP; }
int ibv_cmd_create_counters(struct ibv_context*, struct ibv_counters_init_attr*, struct verbs_counters*,
                            struct ibv_command_buffer*) {
    return EOPNOTSUPP;
}
int ibv_cmd_destroy_counters(struct verbs_counters*) { return EOPNOTSUPP; }
int ibv_cmd_read_counters(struct verbs_counters*, uint64_t*, uint32_t, uint32_t, struct ibv_command_buffer*) {
    return EOPNOTSUPP;
}
int ibv_cmd_alloc_dm(struct ibv_context*, const struct ibv_alloc_dm_attr*, struct verbs_dm*,
                     struct ibv_command_buffer*) {
    return EOPNOTSUPP;
}
int ibv_cmd_free_dm(struct verbs_dm*) { return EOPNOTSUPP; }
int ibv_cmd_reg_dm_mr(struct ibv_pd*, struct verbs_dm*, uint64_t, size_t, unsigned int, struct verbs_mr*,
                      struct ibv_command_buffer*) {
    return EOPNOTSUPP;
}

} // extern "C"

// The verbs the emulated NIC implements, as rdma-core's libibverbs.so.1 exports them. This is
// the provider half of the NIC: slow-path verbs are commands to the daemon over the context's
// command channel; post_send, post_recv, poll_cq and req_notify_cq (inline in verbs.h, reached
// through ibv_context_ops) touch only the shared rings of nic_emu/hw_abi.hpp.
//
// Return conventions follow rdma-core 44: int verbs return 0 or an errno value; constructors
// return NULL with errno set; ibv_query_gid/ibv_query_pkey return -1 on failure.

#include "dataplane/wake_flag.hpp"
#include "nic_emu/attach_protocol.hpp"
#include "nic_emu/hw_abi.hpp"
#include "nic_emu/verbs/command_channel.hpp"
#include "nic_emu/verbs/objects.hpp"
#include "nic_emu/verbs/shared_pages.hpp"

#include <infiniband/verbs.h>
// verbs.h wraps these in macros that pick a variant at the call site; here they are defined.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>
#include <mutex>
#include <new>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace rocefab;

namespace {

using namespace rocefab::verbs;

// ---- fast path -------------------------------------------------------------------------

// After the device died (device_fatal.cpp) posting fails, as every verb does.
template <typename WorkRequest> bool device_is_dead(ibv_context* context, WorkRequest* wr, WorkRequest** bad_wr) {
    if (!context_of(context)->dead.load(std::memory_order_acquire)) return false;
    *bad_wr = wr;
    return true;
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    rf_qp* qp = qp_of(ibqp);
    if (device_is_dead(ibqp->context, wr, bad_wr)) return EIO;
    std::lock_guard guard(qp->send_lock);
    hw::ring_header& ring = qp->control->send;
    std::uint32_t producer = ring.producer.load(std::memory_order_relaxed);
    const std::uint32_t mask = qp->send_slot_count - 1;
    int error = 0;
    for (; wr; wr = wr->next) {
        if (ibqp->state < IBV_QPS_RTS) { // RESET, INIT, RTR: nothing may be sent yet
            error = EINVAL;
            break;
        }
        if (producer - ring.consumer.load(std::memory_order_acquire) >= qp->cap.max_send_wr) {
            error = ENOMEM;
            break;
        }
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > qp->cap.max_send_sge) {
            error = EINVAL;
            break;
        }
        hw::send_wqe& slot = qp->send_slots[producer & mask];
        slot.wr_id = wr->wr_id;
        slot.opcode = static_cast<std::uint8_t>(wr->opcode);
        slot.flags = 0;
        if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all) slot.flags |= hw::wqe_flag::signaled;
        if (wr->send_flags & IBV_SEND_SOLICITED) slot.flags |= hw::wqe_flag::solicited;
        if (wr->send_flags & IBV_SEND_FENCE) slot.flags |= hw::wqe_flag::fence;
        slot.immediate = wr->imm_data;
        slot.remote_address = 0;
        slot.rkey = 0;
        switch (wr->opcode) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_RDMA_READ:
            slot.remote_address = wr->wr.rdma.remote_addr;
            slot.rkey = wr->wr.rdma.rkey;
            break;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            slot.remote_address = wr->wr.atomic.remote_addr;
            slot.rkey = wr->wr.atomic.rkey;
            slot.compare_add = wr->wr.atomic.compare_add;
            slot.swap = wr->wr.atomic.swap;
            break;
        default: break;
        }
        if (ibqp->qp_type == IBV_QPT_UD) {
            slot.ud_ah = wr->wr.ud.ah ? wr->wr.ud.ah->handle : 0;
            slot.ud_remote_qpn = wr->wr.ud.remote_qpn;
            slot.ud_remote_qkey = wr->wr.ud.remote_qkey;
        }
        if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ) {
            // Inline data is copied now, as hardware copies it into the WQE: the caller may
            // reuse its buffer as soon as ibv_post_send returns.
            std::size_t total = 0;
            for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
            if (total > qp->cap.max_inline_data) {
                error = EINVAL;
                break;
            }
            std::size_t at = 0;
            for (int i = 0; i < wr->num_sge; ++i) {
                std::memcpy(slot.inline_bytes + at, reinterpret_cast<const void*>(wr->sg_list[i].addr),
                            wr->sg_list[i].length);
                at += wr->sg_list[i].length;
            }
            slot.flags |= hw::wqe_flag::inline_data;
            slot.inline_length = static_cast<std::uint32_t>(total);
            slot.num_sge = 0;
        } else {
            slot.inline_length = 0;
            slot.num_sge = static_cast<std::uint8_t>(wr->num_sge);
            for (int i = 0; i < wr->num_sge; ++i)
                slot.sg_list[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
        }
        ++producer;
        ring.producer.store(producer, std::memory_order_release); // the doorbell
    }
    if (error) *bad_wr = wr;
    notify_nic(context_of(ibqp->context), qp);
    return error;
}

// Receive WQEs into a receive ring, a QP's or an SRQ's; the caller holds the ring's lock.
int post_receives(hw::ring_header& ring, hw::recv_wqe* slots, std::uint32_t slot_count, std::uint32_t max_wr,
                  std::uint32_t max_sge, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    std::uint32_t producer = ring.producer.load(std::memory_order_relaxed);
    const std::uint32_t mask = slot_count - 1;
    int error = 0;
    for (; wr; wr = wr->next) {
        if (producer - ring.consumer.load(std::memory_order_acquire) >= max_wr) {
            error = ENOMEM;
            break;
        }
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > max_sge) {
            error = EINVAL;
            break;
        }
        hw::recv_wqe& slot = slots[producer & mask];
        slot.wr_id = wr->wr_id;
        slot.num_sge = static_cast<std::uint32_t>(wr->num_sge);
        for (int i = 0; i < wr->num_sge; ++i)
            slot.sg_list[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
        ++producer;
        ring.producer.store(producer, std::memory_order_release);
    }
    if (error) *bad_wr = wr;
    return error;
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    rf_qp* qp = qp_of(ibqp);
    if (device_is_dead(ibqp->context, wr, bad_wr)) return EIO;
    if (ibqp->state == IBV_QPS_RESET) {
        *bad_wr = wr;
        return EINVAL;
    }
    int error;
    {
        std::lock_guard guard(qp->recv_lock);
        error = post_receives(qp->control->recv, qp->recv_slots, qp->recv_slot_count, qp->cap.max_recv_wr,
                              qp->cap.max_recv_sge, wr, bad_wr);
    }
    // The NIC takes receive WQEs when requests arrive; it must look only at a QP in the error
    // state, which flushes them, but telling it costs nothing once the QP is queued.
    notify_nic(context_of(ibqp->context), qp);
    return error;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    rf_srq* srq = reinterpret_cast<rf_srq*>(ibsrq);
    if (device_is_dead(ibsrq->context, wr, bad_wr)) return EIO;
    int error;
    {
        std::lock_guard guard(srq->lock);
        error = post_receives(srq->control->recv, srq->slots, srq->slot_count, srq->max_wr, srq->max_sge, wr, bad_wr);
    }
    // Nothing to tell the NIC: it takes an SRQ's WQEs when requests arrive.
    return error;
}

constexpr unsigned empty_polls_before_yield = 4;

// Takes up to `entries` completions off the CQ's ring.
int poll_ring(rf_cq* cq, int entries, ibv_wc* wc) {
    std::lock_guard guard(cq->poll_lock);
    hw::ring_header& ring = cq->control->ring;
    std::uint32_t consumer = ring.consumer.load(std::memory_order_relaxed);
    const std::uint32_t producer = ring.producer.load(std::memory_order_acquire);
    int n = 0;
    for (; n < entries && consumer != producer; ++n, ++consumer) {
        const hw::cqe& e = cq->slots[consumer & (cq->slot_count - 1)];
        ibv_wc& out = wc[n];
        out.wr_id = e.wr_id;
        out.status = static_cast<ibv_wc_status>(e.status);
        out.opcode = static_cast<ibv_wc_opcode>(e.opcode);
        out.vendor_err = e.vendor_err;
        out.byte_len = e.byte_len;
        out.imm_data = e.immediate;
        out.qp_num = e.qp_num;
        out.src_qp = e.src_qp;
        out.wc_flags = e.wc_flags;
        out.pkey_index = e.pkey_index;
        out.slid = e.slid;
        out.sl = e.sl;
        out.dlid_path_bits = e.dlid_path_bits;
    }
    ring.consumer.store(consumer, std::memory_order_release);
    return n;
}

int poll_cq(ibv_cq* ibcq, int entries, ibv_wc* wc) {
    rf_cq* cq = cq_of(ibcq);
    const int n = poll_ring(cq, entries, wc);
    if (n == 0 && cq->empty_polls.fetch_add(1, std::memory_order_relaxed) >= empty_polls_before_yield) {
        // The "hardware" is a process too. A program that busy-polls an empty CQ on a machine
        // with fewer cores than busy threads would otherwise hold the core the NIC needs to
        // produce the completion it waits for.
        cq->empty_polls.store(0, std::memory_order_relaxed);
        sched_yield();
        // Nothing more comes from a dead device: its flush completions are there at once.
        if (!device_alive(context_of(ibcq->context))) return poll_ring(cq, entries, wc);
    }
    return n;
}

int req_notify_cq(ibv_cq* ibcq, int solicited_only) {
    // Sequentially consistent, paired with the NIC's fence between publishing a CQE and reading
    // `armed`: either the NIC sees the arm, or the CQE was published before it and the caller's
    // next poll finds it.
    cq_of(ibcq)->control->armed.store(solicited_only ? hw::cq_arm::solicited : hw::cq_arm::next,
                                      std::memory_order_seq_cst);
    return 0;
}

int query_port_ex(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr, size_t port_attr_len);

// ---- device list -----------------------------------------------------------------------

// Devices live as long as the program, as rdma-core keeps them while anything refers to them:
// a context outlives the list it was opened from (UCX frees the list right after opening), and
// every list names the same ibv_device for the same NIC, so pointers compare equal across calls.
// A host has at most attach::max_devices NICs, so the registry stays small.
std::mutex device_lock;
std::vector<rf_device*>& known_devices() {
    static auto* devices = new std::vector<rf_device*>(); // never destroyed: contexts may outlive exit handlers
    return *devices;
}

// The device for `info`, made the first time its name is seen. Called under device_lock.
rf_device* device_for(const attach::device_info& info, int index) {
    for (rf_device* d : known_devices()) {
        if (std::strncmp(d->info.name, info.name, sizeof info.name) == 0) {
            d->index = index;
            return d;
        }
    }
    auto* d = new (std::nothrow) rf_device{};
    if (!d) return nullptr;
    d->info = info;
    d->index = index;
    d->device.node_type = IBV_NODE_CA;
    d->device.transport_type = IBV_TRANSPORT_IB;
    const std::size_t n = known_devices().size();
    std::snprintf(d->device.name, sizeof d->device.name, "%s", info.name);
    std::snprintf(d->device.dev_name, sizeof d->device.dev_name, "uverbs%zu", n);
    std::snprintf(d->device.dev_path, sizeof d->device.dev_path, "/sys/class/infiniband_verbs/uverbs%zu", n);
    std::snprintf(d->device.ibdev_path, sizeof d->device.ibdev_path, "/sys/class/infiniband/%s", info.name);
    try {
        known_devices().push_back(d);
    } catch (const std::bad_alloc&) {
        delete d;
        return nullptr;
    }
    return d;
}

} // namespace

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
    attach::reply hello;
    std::memset(&hello, 0, sizeof hello);
    verbs::command_channel channel;
    std::size_t count = 0;
    // Outside `rocefab run` there is no emulated host: the list is empty, as on a machine
    // whose RDMA devices are all absent.
    if (channel.connect_and_hello(hello) == 0)
        count = std::min<std::size_t>(hello.hello.device_count, attach::max_devices);

    // NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers, as the verbs API hands out
    auto** list = static_cast<ibv_device**>(std::calloc(count + 1, sizeof(ibv_device*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    {
        std::lock_guard guard(device_lock);
        for (std::size_t i = 0; i < count; ++i) {
            rf_device* d = device_for(hello.hello.devices[i], static_cast<int>(i));
            if (!d) {
                std::free(list);
                errno = ENOMEM;
                return nullptr;
            }
            list[i] = &d->device;
        }
    }
    if (num_devices) *num_devices = static_cast<int>(count);
    return list;
}

void ibv_free_device_list(ibv_device** devices) { std::free(devices); }

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

__be64 ibv_get_device_guid(ibv_device* device) { return reinterpret_cast<rf_device*>(device)->info.node_guid; }

int ibv_get_device_index(ibv_device* device) { return reinterpret_cast<rf_device*>(device)->index; }

// ---- context ---------------------------------------------------------------------------

ibv_context* ibv_open_device(ibv_device* device) {
    rf_device* dev = reinterpret_cast<rf_device*>(device);
    auto* ctx = new (std::nothrow) rf_context{};
    if (!ctx) {
        errno = ENOMEM;
        return nullptr;
    }
    attach::reply reply;
    std::memset(&reply, 0, sizeof reply);
    int error = ctx->channel.connect_and_hello(reply);
    int fds[attach::open_device_reply_fds] = {-1, -1, -1, -1};
    auto close_fds = [&] {
        for (int& fd : fds)
            if (fd >= 0) ::close(fd), fd = -1;
    };
    if (!error) {
        // The NIC reaches this program's registered memory through these two descriptors, as a
        // device uses DMA (nic_emu/process_memory.hpp): opened here, with this program's rights,
        // they reach this address space and nothing else, and nothing once this program execs.
        const int memory[attach::open_device_request_fds] = {::open("/proc/self/mem", O_RDWR | O_CLOEXEC),
                                                             ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC)};
        if (memory[0] < 0 || memory[1] < 0) {
            error = errno;
        } else {
            attach::request request = make_request(attach::op::open_device);
            std::snprintf(request.open_device.device, sizeof request.open_device.device, "%s", dev->info.name);
            error = ctx->channel.call(request, reply, memory, fds);
            if (!error) error = reply.status;
        }
        for (int fd : memory)
            if (fd >= 0) ::close(fd);
    }
    if (!error && std::find(std::begin(fds), std::end(fds), -1) != std::end(fds)) error = EIO;
    if (error) {
        close_fds();
        delete ctx;
        errno = error;
        return nullptr;
    }
    const int async_fd = fds[0];
    ctx->doorbell_fd = fds[1];
    ctx->wake = static_cast<const wake_flag*>(map_shared(fds[2], 4096, PROT_READ));
    ctx->doorbells = static_cast<hw::doorbell_queue*>(map_shared(fds[3], hw::doorbell_queue_region_size));
    if (!ctx->wake || !ctx->doorbells) {
        if (ctx->wake) ::munmap(const_cast<wake_flag*>(ctx->wake), 4096);
        if (ctx->doorbells) ::munmap(ctx->doorbells, hw::doorbell_queue_region_size);
        ::close(async_fd);
        ::close(ctx->doorbell_fd);
        delete ctx;
        errno = EIO;
        return nullptr;
    }

    ctx->info = reply.open_device.device;
    ibv_context& c = ctx->verbs.context;
    c.device = device;
    c.cmd_fd = ctx->channel.fd();
    c.async_fd = async_fd;
    c.num_comp_vectors = 1;
    pthread_mutex_init(&c.mutex, nullptr);
    c.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c.ops.poll_cq = poll_cq;
    c.ops.req_notify_cq = req_notify_cq;
    c.ops.post_send = post_send;
    c.ops.post_recv = post_recv;
    c.ops.post_srq_recv = post_srq_recv;
    ctx->verbs.sz = sizeof(verbs_context);
    ctx->verbs.query_port = query_port_ex;
    install_extended_ops(ctx->verbs);
    return &c;
}

int ibv_close_device(ibv_context* context) {
    rf_context* ctx = context_of(context);
    // Closing the command channel is the daemon's signal to free everything the context
    // still holds, as closing /dev/infiniband/uverbsN is the kernel's.
    if (context->async_fd >= 0) ::close(context->async_fd);
    for (int fd : ctx->dead_device_pipes) ::close(fd);
    ::close(ctx->doorbell_fd);
    ::munmap(const_cast<wake_flag*>(ctx->wake), 4096);
    ::munmap(ctx->doorbells, hw::doorbell_queue_region_size);
    delete ctx;
    return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* device_attr) {
    attach::request request = make_request(attach::op::query_device);
    attach::reply reply;
    if (int error = command(context, request, reply)) return error;
    *device_attr = reply.open_device.device.device;
    return 0;
}

// The exported symbol keeps the old, shorter layout (rdma-core's _compat_ibv_port_attr ends
// with `flags`); programs built against current headers reach query_port_ex through the
// verbs_context instead.
int ibv_query_port(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* port_attr) {
    return query_port_ex(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                         offsetof(ibv_port_attr, flags) + sizeof(ibv_port_attr::flags));
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    const rf_context* ctx = context_of(context);
    if (port_num != 1 || index < 0 || index >= static_cast<int>(attach::gid_table_size)) return -1;
    std::memcpy(gid->raw, ctx->info.gids[index], sizeof gid->raw);
    return 0;
}

int ibv_query_pkey(ibv_context*, uint8_t port_num, int index, __be16* pkey) {
    // One partition: the default full-membership P_Key, as on every RoCE port.
    if (port_num != 1 || index != 0) return -1;
    *pkey = htobe16(0xffff);
    return 0;
}

int ibv_get_pkey_index(ibv_context*, uint8_t port_num, __be16 pkey) {
    if (port_num != 1) return -EINVAL;
    return (be16toh(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry, uint32_t flags,
                      size_t entry_size) {
    if (flags) return EINVAL;
    if (entry_size < sizeof(ibv_gid_entry)) return EINVAL;
    if (port_num != 1) return EINVAL;
    if (gid_index >= attach::gid_table_size) return ENODATA;
    const rf_context* ctx = context_of(context);
    std::memset(entry, 0, sizeof *entry);
    std::memcpy(entry->gid.raw, ctx->info.gids[gid_index], sizeof entry->gid.raw);
    entry->gid_index = gid_index;
    entry->port_num = port_num;
    entry->gid_type = IBV_GID_TYPE_ROCE_V2;
    entry->ndev_ifindex = 0;
    return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    if (max_entries < attach::gid_table_size) return -EINVAL;
    for (uint32_t i = 0; i < attach::gid_table_size; ++i) {
        auto* entry = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + i * entry_size);
        if (int error = _ibv_query_gid_ex(context, 1, i, entry, 0, sizeof(ibv_gid_entry))) return -error;
    }
    return attach::gid_table_size;
}

// enum ibv_gid_type_sysfs from rdma-core's driver.h: IB/RoCE v1 = 0, RoCE v2 = 1.
int ibv_query_gid_type(ibv_context*, uint8_t port_num, unsigned int index, int* type) {
    if (port_num != 1 || index >= attach::gid_table_size) {
        errno = EINVAL;
        return -1;
    }
    *type = 1;
    return 0;
}

int ibv_fork_init(void) {
    // Registered memory is reached with process_vm_readv/writev and never pinned, so fork()
    // cannot break it: there is nothing to set up (rdma-core reports this as IBV_FORK_UNNEEDED).
    return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

// ---- PD and MR -------------------------------------------------------------------------

ibv_pd* ibv_alloc_pd(ibv_context* context) {
    attach::request request = make_request(attach::op::alloc_pd);
    attach::reply reply;
    if (int error = command(context, request, reply)) {
        errno = error;
        return nullptr;
    }
    auto* pd = new (std::nothrow) rf_pd{};
    if (!pd) {
        errno = ENOMEM;
        return nullptr;
    }
    pd->pd.context = context;
    pd->pd.handle = reply.handle;
    return &pd->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
    attach::request request = make_request(attach::op::dealloc_pd, pd->handle);
    attach::reply reply;
    if (int error = command(pd->context, request, reply)) return error;
    delete reinterpret_cast<rf_pd*>(pd);
    return 0;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
    attach::request request = make_request(attach::op::reg_mr);
    request.reg_mr.pd = pd->handle;
    request.reg_mr.access = access;
    request.reg_mr.address = reinterpret_cast<std::uint64_t>(addr);
    request.reg_mr.length = length;
    request.reg_mr.iova = iova;
    // An on-demand-paging MR follows the program's mappings as they change: left where it is.
    const shared_pages shared = access & IBV_ACCESS_ON_DEMAND ? shared_pages{} : share_pages(addr, length);
    request.reg_mr.shared_address = shared.address;
    request.reg_mr.shared_length = shared.length;
    attach::reply reply;
    const int error = command(pd->context, request, reply, nullptr,
                              shared.fd >= 0 ? std::span<const int>(&shared.fd, 1) : std::span<const int>());
    if (shared.fd >= 0) ::close(shared.fd); // the daemon holds its own copy, the pages their mapping
    if (error) {
        errno = error;
        return nullptr;
    }
    auto* mr = new (std::nothrow) rf_mr{};
    if (!mr) {
        errno = ENOMEM;
        return nullptr;
    }
    mr->mr.context = pd->context;
    mr->mr.pd = pd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = reply.handle;
    mr->mr.lkey = reply.reg_mr.lkey;
    mr->mr.rkey = reply.reg_mr.rkey;
    return &mr->mr;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<std::uint64_t>(addr), static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

int ibv_dereg_mr(ibv_mr* mr) {
    attach::request request = make_request(attach::op::dereg_mr, mr->handle);
    attach::reply reply;
    if (int error = command(mr->context, request, reply)) return error;
    delete reinterpret_cast<rf_mr*>(mr);
    return 0;
}

// ---- completion channels and CQs ---------------------------------------------------------

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    attach::request request = make_request(attach::op::create_comp_channel);
    attach::reply reply;
    int fd = -1;
    if (int error = command(context, request, reply, &fd)) {
        if (fd >= 0) ::close(fd);
        errno = error;
        return nullptr;
    }
    if (fd < 0) {
        errno = EIO;
        return nullptr;
    }
    auto* channel = new (std::nothrow) rf_channel{};
    if (!channel) {
        ::close(fd);
        errno = ENOMEM;
        return nullptr;
    }
    channel->channel.context = context;
    channel->channel.fd = fd;
    channel->channel.refcnt = 0;
    channel->handle = reply.handle;
    rf_context* ctx = context_of(context);
    std::lock_guard guard(ctx->objects_lock);
    ctx->channels[reply.handle] = channel;
    return &channel->channel;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    if (channel->refcnt) return EBUSY; // CQs still use it, as rdma-core refuses too
    auto* rf = reinterpret_cast<rf_channel*>(channel);
    attach::request request = make_request(attach::op::destroy_comp_channel, rf->handle);
    attach::reply reply;
    if (int error = command(channel->context, request, reply)) return error;
    {
        rf_context* ctx = context_of(channel->context);
        std::lock_guard guard(ctx->objects_lock);
        ctx->channels.erase(rf->handle);
    }
    ::close(channel->fd);
    delete rf;
    return 0;
}

} // extern "C"

rf_cq* rocefab::verbs::create_cq_object(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                        int comp_vector) {
    if (cqe < 1 || static_cast<std::uint32_t>(cqe) > hw::max_cqe || comp_vector < 0 ||
        comp_vector >= context->num_comp_vectors) {
        errno = EINVAL;
        return nullptr;
    }
    attach::request request = make_request(attach::op::create_cq);
    request.create_cq.cqe = static_cast<std::uint32_t>(cqe);
    request.create_cq.channel = channel ? reinterpret_cast<rf_channel*>(channel)->handle : 0;
    attach::reply reply;
    int fd = -1;
    if (int error = command(context, request, reply, &fd)) {
        if (fd >= 0) ::close(fd);
        errno = error;
        return nullptr;
    }
    auto* cq = new (std::nothrow) rf_cq{};
    const std::size_t length = hw::cq_region_size(reply.create_cq.slots);
    void* region = fd >= 0 ? map_shared(fd, length) : nullptr;
    if (!cq || !region) {
        if (region) ::munmap(region, length);
        delete cq;
        attach::request destroy = make_request(attach::op::destroy_cq, reply.handle);
        command(context, destroy, reply);
        errno = ENOMEM;
        return nullptr;
    }
    cq->control = static_cast<hw::cq_control*>(region);
    cq->slots = reinterpret_cast<hw::cqe*>(static_cast<char*>(region) + hw::cq_slots_offset);
    cq->slot_count = reply.create_cq.slots;
    cq->map_length = length;
    cq->cq.context = context;
    cq->cq.channel = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.handle = reply.handle;
    cq->cq.cqe = cqe;
    pthread_mutex_init(&cq->cq.mutex, nullptr);
    pthread_cond_init(&cq->cq.cond, nullptr);
    if (channel) ++channel->refcnt;
    rf_context* ctx = context_of(context);
    std::lock_guard guard(ctx->objects_lock);
    ctx->cqs[reply.handle] = cq;
    return cq;
}

extern "C" {

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
    rf_cq* cq = create_cq_object(context, cqe, cq_context, channel, comp_vector);
    return cq ? &cq->cq : nullptr;
}

int ibv_destroy_cq(ibv_cq* ibcq) {
    rf_cq* cq = cq_of(ibcq);
    attach::request request = make_request(attach::op::destroy_cq, ibcq->handle);
    attach::reply reply;
    if (int error = command(ibcq->context, request, reply)) return error;
    if (ibcq->channel) --ibcq->channel->refcnt;
    {
        rf_context* ctx = context_of(ibcq->context);
        std::lock_guard guard(ctx->objects_lock);
        ctx->cqs.erase(ibcq->handle);
    }
    ::munmap(cq->control, cq->map_length);
    delete cq;
    return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    attach::cq_event_record record;
    rf_context* ctx = context_of(channel->context);
    if (!read_event(ctx, channel->fd, &record, sizeof record)) return -1;
    std::lock_guard guard(ctx->objects_lock);
    auto it = ctx->cqs.find(record.cq_handle);
    if (it == ctx->cqs.end()) {
        errno = EIO;
        return -1;
    }
    *cq = &it->second->cq;
    *cq_context = it->second->cq.cq_context;
    return 0;
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// ---- QPs -------------------------------------------------------------------------------

} // extern "C"

rf_qp* rocefab::verbs::create_qp_object(ibv_pd* pd, ibv_qp_init_attr* init) {
    if (!init->send_cq || !init->recv_cq) {
        errno = EINVAL;
        return nullptr;
    }
    if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC && init->qp_type != IBV_QPT_UD) {
        // XRC, raw packet and driver QPs: the NIC refuses them as a device without them does.
        errno = EOPNOTSUPP;
        return nullptr;
    }
    attach::request request = make_request(attach::op::create_qp);
    request.create_qp.pd = pd->handle;
    request.create_qp.send_cq = init->send_cq->handle;
    request.create_qp.recv_cq = init->recv_cq->handle;
    request.create_qp.qp_type = init->qp_type;
    request.create_qp.sq_sig_all = init->sq_sig_all;
    request.create_qp.cap = init->cap;
    request.create_qp.srq = init->srq ? init->srq->handle : 0;
    attach::reply reply;
    int fd = -1;
    if (int error = command(pd->context, request, reply, &fd)) {
        if (fd >= 0) ::close(fd);
        errno = error;
        return nullptr;
    }
    const std::uint32_t send_slots = reply.create_qp.send_slots;
    const std::uint32_t recv_slots = reply.create_qp.recv_slots;
    const std::size_t length = hw::qp_region_size(send_slots, recv_slots);
    auto* qp = new (std::nothrow) rf_qp{};
    void* region = fd >= 0 ? map_shared(fd, length) : nullptr;
    if (!qp || !region) {
        if (region) ::munmap(region, length);
        delete qp;
        attach::request destroy = make_request(attach::op::destroy_qp, reply.handle);
        command(pd->context, destroy, reply);
        errno = ENOMEM;
        return nullptr;
    }
    qp->control = static_cast<hw::qp_control*>(region);
    qp->send_slots = reinterpret_cast<hw::send_wqe*>(static_cast<char*>(region) + hw::qp_send_slots_offset);
    qp->recv_slots = reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region) + hw::qp_recv_slots_offset(send_slots));
    qp->map_length = length;
    qp->send_slot_count = send_slots;
    qp->recv_slot_count = recv_slots;
    qp->cap = reply.create_qp.cap;
    qp->sq_sig_all = init->sq_sig_all != 0;
    ibv_qp& q = qp->qp;
    q.context = pd->context;
    q.qp_context = init->qp_context;
    q.pd = pd;
    q.send_cq = init->send_cq;
    q.recv_cq = init->recv_cq;
    q.srq = init->srq;
    q.handle = reply.handle;
    q.qp_num = reply.create_qp.qp_num;
    q.state = IBV_QPS_RESET;
    q.qp_type = init->qp_type;
    pthread_mutex_init(&q.mutex, nullptr);
    pthread_cond_init(&q.cond, nullptr);
    init->cap = qp->cap; // ibv_create_qp reports what the QP really got
    rf_context* ctx = context_of(pd->context);
    std::lock_guard guard(ctx->objects_lock);
    ctx->qps[reply.handle] = qp;
    return qp;
}

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
    rf_qp* qp = create_qp_object(pd, init);
    return qp ? &qp->qp : nullptr;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    attach::request request = make_request(attach::op::modify_qp, qp->handle);
    request.modify_qp.attr = *attr;
    request.modify_qp.mask = attr_mask;
    attach::reply reply;
    if (int error = command(qp->context, request, reply)) return error;
    if (attr_mask & IBV_QP_STATE) qp->state = attr->qp_state;
    return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
    (void)attr_mask; // like rdma-core's providers, every attribute is reported
    attach::request request = make_request(attach::op::query_qp, qp->handle);
    attach::reply reply;
    if (int error = command(qp->context, request, reply)) return error;
    *attr = reply.query_qp.attr;
    qp->state = attr->qp_state;
    if (init_attr) {
        std::memset(init_attr, 0, sizeof *init_attr);
        init_attr->qp_context = qp->qp_context;
        init_attr->send_cq = qp->send_cq;
        init_attr->recv_cq = qp->recv_cq;
        init_attr->srq = qp->srq;
        init_attr->cap = reply.query_qp.cap;
        init_attr->qp_type = qp->qp_type;
        init_attr->sq_sig_all = static_cast<int>(reply.query_qp.sq_sig_all);
    }
    return 0;
}

int ibv_destroy_qp(ibv_qp* ibqp) {
    rf_qp* qp = qp_of(ibqp);
    attach::request request = make_request(attach::op::destroy_qp, ibqp->handle);
    attach::reply reply;
    if (int error = command(ibqp->context, request, reply)) return error;
    {
        rf_context* ctx = context_of(ibqp->context);
        std::lock_guard guard(ctx->objects_lock);
        ctx->qps.erase(ibqp->handle);
    }
    ::munmap(qp->control, qp->map_length);
    delete qp;
    return 0;
}

// ---- address handles -------------------------------------------------------------------

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    attach::request request = make_request(attach::op::create_ah);
    request.create_ah.pd = pd->handle;
    request.create_ah.attr = *attr;
    attach::reply reply;
    if (int error = command(pd->context, request, reply)) {
        errno = error;
        return nullptr;
    }
    auto* ah = new (std::nothrow) rf_ah{};
    if (!ah) {
        attach::request destroy = make_request(attach::op::destroy_ah, reply.handle);
        command(pd->context, destroy, reply);
        errno = ENOMEM;
        return nullptr;
    }
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->ah.handle = reply.handle;
    return &ah->ah;
}

int ibv_destroy_ah(ibv_ah* ah) {
    attach::request request = make_request(attach::op::destroy_ah, ah->handle);
    attach::reply reply;
    if (int error = command(ah->context, request, reply)) return error;
    delete reinterpret_cast<rf_ah*>(ah);
    return 0;
}

// ---- shared receive queues --------------------------------------------------------------

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
    attach::request request = make_request(attach::op::create_srq);
    request.create_srq.pd = pd->handle;
    request.create_srq.attr = init->attr;
    attach::reply reply;
    int fd = -1;
    if (int error = command(pd->context, request, reply, &fd)) {
        if (fd >= 0) ::close(fd);
        errno = error;
        return nullptr;
    }
    const std::size_t length = hw::srq_region_size(reply.create_srq.slots);
    auto* srq = new (std::nothrow) rf_srq{};
    void* region = fd >= 0 ? map_shared(fd, length) : nullptr;
    if (!srq || !region) {
        if (region) ::munmap(region, length);
        delete srq;
        attach::request destroy = make_request(attach::op::destroy_srq, reply.handle);
        command(pd->context, destroy, reply);
        errno = ENOMEM;
        return nullptr;
    }
    srq->control = static_cast<hw::srq_control*>(region);
    srq->slots = reinterpret_cast<hw::recv_wqe*>(static_cast<char*>(region) + hw::srq_slots_offset);
    srq->map_length = length;
    srq->slot_count = reply.create_srq.slots;
    srq->max_wr = reply.create_srq.attr.max_wr;
    srq->max_sge = reply.create_srq.attr.max_sge;
    ibv_srq& s = srq->srq;
    s.context = pd->context;
    s.srq_context = init->srq_context;
    s.pd = pd;
    s.handle = reply.handle;
    s.events_completed = 0;
    pthread_mutex_init(&s.mutex, nullptr);
    pthread_cond_init(&s.cond, nullptr);
    // Like ibv_create_qp's cap, the attributes report what the SRQ really got.
    init->attr.max_wr = srq->max_wr;
    init->attr.max_sge = srq->max_sge;
    rf_context* ctx = context_of(pd->context);
    std::lock_guard guard(ctx->objects_lock);
    ctx->srqs[reply.handle] = srq;
    return &s;
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    attach::request request = make_request(attach::op::modify_srq, srq->handle);
    request.modify_srq.attr = *attr;
    request.modify_srq.mask = attr_mask;
    attach::reply reply;
    return command(srq->context, request, reply);
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    attach::request request = make_request(attach::op::query_srq, srq->handle);
    attach::reply reply;
    if (int error = command(srq->context, request, reply)) return error;
    *attr = reply.query_srq.attr;
    return 0;
}

int ibv_destroy_srq(ibv_srq* ibsrq) {
    rf_srq* srq = reinterpret_cast<rf_srq*>(ibsrq);
    attach::request request = make_request(attach::op::destroy_srq, ibsrq->handle);
    attach::reply reply;
    if (int error = command(ibsrq->context, request, reply)) return error;
    {
        rf_context* ctx = context_of(ibsrq->context);
        std::lock_guard guard(ctx->objects_lock);
        ctx->srqs.erase(ibsrq->handle);
    }
    ::munmap(srq->control, srq->map_length);
    delete srq;
    return 0;
}

// ---- async events ----------------------------------------------------------------------

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    attach::async_event_record record;
    rf_context* ctx = context_of(context);
    if (!read_event(ctx, context->async_fd, &record, sizeof record)) return -1;
    event->event_type = static_cast<ibv_event_type>(record.event_type);
    std::lock_guard guard(ctx->objects_lock);
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
        auto it = ctx->cqs.find(record.handle);
        event->element.cq = it == ctx->cqs.end() ? nullptr : &it->second->cq;
        break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
        auto it = ctx->srqs.find(record.handle);
        event->element.srq = it == ctx->srqs.end() ? nullptr : &it->second->srq;
        break;
    }
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_GID_CHANGE: event->element.port_num = static_cast<int>(record.handle); break;
    case IBV_EVENT_DEVICE_FATAL: break;
    default: {
        auto it = ctx->qps.find(record.handle);
        event->element.qp = it == ctx->qps.end() ? nullptr : &it->second->qp;
        break;
    }
    }
    return 0;
}

void ibv_ack_async_event(ibv_async_event*) {
    // Events carry no reference the library must drop: objects are only freed by their
    // destroy verb, which the application calls after acknowledging.
}

} // extern "C"

namespace {

int query_port_ex(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr, size_t port_attr_len) {
    if (port_num != 1) return EINVAL;
    attach::request request = make_request(attach::op::query_port);
    attach::reply reply;
    if (int error = command(context, request, reply)) return error;
    std::memset(port_attr, 0, port_attr_len);
    std::memcpy(port_attr, &reply.open_device.device.port, std::min(port_attr_len, sizeof(ibv_port_attr)));
    return 0;
}

} // namespace

// What this librdmacm does not implement (the README lists it): each call fails as rdma-core's
// does for a missing kernel feature, -1 with errno ENOSYS, so a program sees a clear error
// instead of a missing symbol.
//
// - Multicast (rdma_join_multicast*, rdma_leave_multicast): the emulated NIC has no multicast
//   group table and the switch no IGMP/MLD snooping.
// - rsocket (rsocket.h, the socket API over RDMA that librspreload.so maps BSD sockets onto):
//   not written yet. librspreload falls back to the kernel's sockets when rsocket() fails.
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <cerrno>

namespace {
int not_implemented() {
    errno = ENOSYS;
    return -1;
}
} // namespace

extern "C" {

int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) { return not_implemented(); }
int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) { return not_implemented(); }
int rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return not_implemented(); }

int rsocket(int, int, int) { return not_implemented(); }
int rbind(int, const sockaddr*, socklen_t) { return not_implemented(); }
int rlisten(int, int) { return not_implemented(); }
int raccept(int, sockaddr*, socklen_t*) { return not_implemented(); }
int rconnect(int, const sockaddr*, socklen_t) { return not_implemented(); }
int rshutdown(int, int) { return not_implemented(); }
int rclose(int) { return not_implemented(); }
ssize_t rrecv(int, void*, size_t, int) { return not_implemented(); }
ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) { return not_implemented(); }
ssize_t rrecvmsg(int, msghdr*, int) { return not_implemented(); }
ssize_t rsend(int, const void*, size_t, int) { return not_implemented(); }
ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) { return not_implemented(); }
ssize_t rsendmsg(int, const msghdr*, int) { return not_implemented(); }
ssize_t rread(int, void*, size_t) { return not_implemented(); }
ssize_t rreadv(int, const iovec*, int) { return not_implemented(); }
ssize_t rwrite(int, const void*, size_t) { return not_implemented(); }
ssize_t rwritev(int, const iovec*, int) { return not_implemented(); }
int rpoll(pollfd*, nfds_t, int) { return not_implemented(); }
int rselect(int, fd_set*, fd_set*, fd_set*, timeval*) { return not_implemented(); }
int rgetpeername(int, sockaddr*, socklen_t*) { return not_implemented(); }
int rgetsockname(int, sockaddr*, socklen_t*) { return not_implemented(); }
int rsetsockopt(int, int, int, const void*, socklen_t) { return not_implemented(); }
int rgetsockopt(int, int, int, void*, socklen_t*) { return not_implemented(); }
int rfcntl(int, int, ...) { return not_implemented(); }
off_t riomap(int, void*, size_t, int, int, off_t) { return not_implemented(); }
int riounmap(int, void*, size_t) { return not_implemented(); }
size_t riowrite(int, const void*, size_t, off_t, int) {
    errno = ENOSYS;
    return static_cast<size_t>(-1);
}

} // extern "C"

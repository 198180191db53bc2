// ibv_init_ah_from_wc / ibv_create_ah_from_wc: the address a UD reply goes to, read from what a
// receive completion and its GRH say, as rdma-core 44's libibverbs/verbs.c does for RoCE. The
// GRH area of a RoCEv2 datagram holds an IPv6 header, or an IPv4 header in its last 20 bytes;
// the reply's source GID is the table entry with the address the datagram was sent to. udaddy
// and other rdma_cm UD programs answer this way.
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <netinet/ip.h>

namespace {

std::uint16_t ipv4_checksum(const std::uint16_t* words, int count) {
    std::uint32_t sum = 0;
    for (int i = 0; i < count; ++i) sum += words[i];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

// 4 or 6; -1 with errno when neither (rdma-core's get_grh_header_version).
int grh_version(const ibv_grh* grh) {
    const int ip6_version = (ntohl(grh->version_tclass_flow) >> 28) & 0xf;
    const auto* ip4 = reinterpret_cast<const iphdr*>(reinterpret_cast<const std::uint8_t*>(grh) + 20);
    if (ip6_version != 6) {
        if (ip4->version == 4) return 4;
        errno = EPROTONOSUPPORT;
        return -1;
    }
    // The first byte of an IPv4 header may look like IPv6's version: its checksum decides.
    if (ip4->ihl != 5) return 6;
    iphdr checked;
    std::memcpy(&checked, ip4, sizeof checked);
    checked.check = 0;
    checked.check = ipv4_checksum(reinterpret_cast<const std::uint16_t*>(&checked), 10);
    return ip4->check == checked.check ? 4 : 6;
}

int find_gid_index(ibv_context* context, std::uint8_t port, const ibv_gid& gid) {
    ibv_port_attr attr{};
    if (ibv_query_port(context, port, &attr)) return -1;
    for (int i = 0; i < attr.gid_tbl_len; ++i) {
        ibv_gid each;
        if (ibv_query_gid(context, port, i, &each)) continue;
        if (std::memcmp(each.raw, gid.raw, sizeof gid.raw) == 0) return i;
    }
    errno = ENOENT;
    return -1;
}

void map_ipv4(std::uint32_t address_be, ibv_gid& gid) {
    std::memset(gid.raw, 0, sizeof gid.raw);
    gid.raw[10] = gid.raw[11] = 0xff;
    std::memcpy(gid.raw + 12, &address_be, 4);
}

} // namespace

extern "C" {

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* ah_attr) {
    if (!context || !wc || !ah_attr || (wc->wc_flags & IBV_WC_GRH && !grh)) {
        errno = EINVAL;
        return -1;
    }
    std::memset(ah_attr, 0, sizeof *ah_attr);
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    // RoCE always carries a GRH (rdma-core: an Ethernet port without one is EPROTOTYPE).
    if (!(wc->wc_flags & IBV_WC_GRH)) {
        errno = EPROTOTYPE;
        return -1;
    }
    ah_attr->is_global = 1;
    ah_attr->grh.flow_label = ntohl(grh->version_tclass_flow) & 0xfffff;
    const int version = grh_version(grh);
    if (version < 0) return -1;
    ibv_gid sgid;
    if (version == 4) {
        const auto* ip4 = reinterpret_cast<const iphdr*>(reinterpret_cast<const std::uint8_t*>(grh) + 20);
        if (IN_CLASSD(ntohl(ip4->daddr))) { // no multicast GIDs in the table to look for
            errno = EINVAL;
            return -1;
        }
        map_ipv4(ip4->daddr, sgid);
        map_ipv4(ip4->saddr, ah_attr->grh.dgid);
        ah_attr->grh.hop_limit = ip4->ttl;
        ah_attr->grh.traffic_class = ip4->tos;
    } else {
        sgid = grh->dgid;
        ah_attr->grh.dgid = grh->sgid;
        ah_attr->grh.hop_limit = grh->hop_limit;
        ah_attr->grh.traffic_class = static_cast<std::uint8_t>(ntohl(grh->version_tclass_flow) >> 20);
    }
    const int index = find_gid_index(context, port_num, sgid);
    if (index < 0) return -1;
    ah_attr->grh.sgid_index = static_cast<std::uint8_t>(index);
    return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    if (!pd) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_ah_attr attr;
    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) return nullptr;
    return ibv_create_ah(pd, &attr);
}

} // extern "C"

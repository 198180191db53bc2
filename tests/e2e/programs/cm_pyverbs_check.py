#!/usr/bin/python3
"""Both ends of an rdma_cm connection in one process on one device (NIC loopback), through pyverbs,
in the two flows rdma-core's own test_rdmacm uses that no rdmacm-utils program does:
  ext_qp  ADDRESS PORT: the program's own RC QP (ibv_create_qp), connected with conn_param.qp_num,
          moved by the program with rdma_init_qp_attr; the active side ends with rdma_establish,
          the passive side gets ESTABLISHED.
  udp     ADDRESS PORT: RDMA_PS_UDP ids, SIDR, and a UD send through an AH made on the id's own PD
          (pyverbs' PD(cmid), which is id->pd from the moment the id has a device) from the
          ESTABLISHED event's ah_attr.
Prints "ok" and exits 0 when the message arrives intact.
"""
import sys

import pyverbs.cm_enums as ce
import pyverbs.enums as e
from pyverbs.addr import AH
from pyverbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam, UDParam
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

GRH = 40
SIZE = 1024


def expect(channel, wanted):
    event = CMEvent(channel)
    got = event.event_type
    if got != wanted:
        sys.exit(f"expected event {wanted}, got {event.event_str()}")
    return event


def wait_cq(cq):
    for _ in range(10_000_000):
        n, wcs = cq.poll()
        if n:
            if wcs[0].status != e.IBV_WC_SUCCESS:
                sys.exit(f"completion status {wcs[0].status}")
            return wcs[0]
    sys.exit("no completion")


def ids(address, port, port_space):
    server_channel, client_channel = CMEventChannel(), CMEventChannel()
    listener = CMID(creator=server_channel, port_space=port_space)
    listener.bind_addr(AddrInfo(src=address, src_service=port, port_space=port_space, flags=ce.RAI_PASSIVE))
    listener.listen()
    client = CMID(creator=client_channel, port_space=port_space)
    client.resolve_addr(AddrInfo(src=address, dst=address, dst_service=port, port_space=port_space))
    expect(client_channel, ce.RDMA_CM_EVENT_ADDR_RESOLVED).ack_cm_event()
    client.resolve_route()
    expect(client_channel, ce.RDMA_CM_EVENT_ROUTE_RESOLVED).ack_cm_event()
    return server_channel, client_channel, listener, client


def move(cmid, qp):
    for state in (e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS):
        attr, mask = cmid.init_qp_attr(state)
        qp.modify(attr, mask)


def ext_qp(address, port):
    server_channel, client_channel, listener, client = ids(address, port, ce.RDMA_PS_TCP)
    client_cq = CQ(client.context, 4, None, None, 0)
    client_qp = QP(client.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=client_cq, rcq=client_cq, cap=QPCap(max_recv_wr=1)), QPAttr())
    client.connect(ConnParam(qp_num=client_qp.qp_num))
    request = expect(server_channel, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
    child = CMID(creator=request, listen_id=listener)
    request.ack_cm_event()
    server_cq = CQ(child.context, 4, None, None, 0)
    server_qp = QP(child.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=server_cq, rcq=server_cq, cap=QPCap(max_recv_wr=1)), QPAttr())
    move(child, server_qp)
    child.accept(ConnParam(qp_num=server_qp.qp_num))
    expect(client_channel, ce.RDMA_CM_EVENT_CONNECT_RESPONSE).ack_cm_event()
    move(client, client_qp)
    client.establish()  # the RTU; before the fix, EINVAL
    expect(server_channel, ce.RDMA_CM_EVENT_ESTABLISHED).ack_cm_event()
    server_mr, client_mr = child.reg_msgs(SIZE), client.reg_msgs(SIZE)
    server_qp.post_recv(RecvWR(num_sge=1, sg=[SGE(server_mr.buf, SIZE, server_mr.lkey)]))
    client_mr.write("c" * SIZE, SIZE)
    client_qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(client_mr.buf, SIZE, client_mr.lkey)]))
    wait_cq(client_cq)
    wait_cq(server_cq)
    if server_mr.read(SIZE, 0) != b"c" * SIZE:
        sys.exit("the message arrived changed")
    client.disconnect()
    expect(server_channel, ce.RDMA_CM_EVENT_DISCONNECTED).ack_cm_event()
    child.disconnect()
    expect(client_channel, ce.RDMA_CM_EVENT_DISCONNECTED).ack_cm_event()


def udp(address, port):
    server_channel, client_channel, listener, client = ids(address, port, ce.RDMA_PS_UDP)
    client.create_qp(QPInitAttr(qp_type=e.IBV_QPT_UD, cap=QPCap(max_recv_wr=1)))
    client.connect(ConnParam())
    request = expect(server_channel, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
    child = CMID(creator=request, listen_id=listener)
    request.ack_cm_event()
    child.create_qp(QPInitAttr(qp_type=e.IBV_QPT_UD, cap=QPCap(max_recv_wr=1)))
    child.accept(ConnParam())
    established = expect(client_channel, ce.RDMA_CM_EVENT_ESTABLISHED)
    ud = UDParam(established)
    established.ack_cm_event()
    if ud.qp_num != child.qpn or ud.qkey != 0x01234567:
        sys.exit(f"SIDR gave qpn {ud.qp_num:#x} qkey {ud.qkey:#x}; the server's QP is {child.qpn:#x}")
    ah = AH(client.pd, attr=ud.ah_attr)  # before the fix, a NULL PD: a segmentation fault
    server_mr, client_mr = child.reg_msgs(SIZE + GRH), client.reg_msgs(SIZE + GRH)
    child.post_recv(server_mr)
    client_mr.write("u" * SIZE, SIZE)
    client.post_ud_send(client_mr, ah, rqpn=ud.qp_num, length=SIZE)
    client.get_send_comp()
    child.get_recv_comp()
    if server_mr.read(SIZE, GRH) != b"u" * SIZE:
        sys.exit("the datagram arrived changed")


if __name__ == "__main__":
    {"ext_qp": ext_qp, "udp": udp}[sys.argv[1]](sys.argv[2], sys.argv[3])
    print("ok")

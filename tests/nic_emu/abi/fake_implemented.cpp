// Test-only stand-ins for the verbs that nic_emu/verbs/verbs.cpp implements
// (nic_emu/verbs/implemented_symbols.txt), so that the ABI-only test library
// (unsupported.cpp + strings.cpp + this) exports rdma-core 44's whole ABI and
// can be checked on its own, without the NIC engine.  They all fail as
// "unsupported"; the real library never links this file.

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

// verbs.h turns these into inline wrappers; the exported names are what we
// define here.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

static void *fail_null()
{
	errno = EOPNOTSUPP;
	return nullptr;
}

static int fail_minus_one()
{
	errno = EOPNOTSUPP;
	return -1;
}

extern "C" {

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	if (num_devices)
		*num_devices = 0;
	return static_cast<ibv_device **>(fail_null());
}
void ibv_free_device_list(struct ibv_device **) {}
const char *ibv_get_device_name(struct ibv_device *) { return static_cast<const char *>(fail_null()); }
__be64 ibv_get_device_guid(struct ibv_device *) { return 0; }
int ibv_get_device_index(struct ibv_device *) { return fail_minus_one(); }
struct ibv_context *ibv_open_device(struct ibv_device *) { return static_cast<ibv_context *>(fail_null()); }
int ibv_close_device(struct ibv_context *) { return fail_minus_one(); }
int ibv_query_device(struct ibv_context *, struct ibv_device_attr *) { return EOPNOTSUPP; }
int ibv_query_port(struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *) { return EOPNOTSUPP; }
int ibv_query_gid(struct ibv_context *, uint8_t, int, union ibv_gid *) { return fail_minus_one(); }
int ibv_query_pkey(struct ibv_context *, uint8_t, int, __be16 *) { return fail_minus_one(); }
int ibv_get_pkey_index(struct ibv_context *, uint8_t, __be16) { return fail_minus_one(); }
int _ibv_query_gid_ex(struct ibv_context *, uint32_t, uint32_t, struct ibv_gid_entry *, uint32_t, size_t)
{
	return EOPNOTSUPP;
}
ssize_t _ibv_query_gid_table(struct ibv_context *, struct ibv_gid_entry *, size_t, uint32_t, size_t)
{
	return -EOPNOTSUPP;
}
int ibv_query_gid_type(struct ibv_context *, uint8_t, unsigned int, int *) { return fail_minus_one(); }
struct ibv_pd *ibv_alloc_pd(struct ibv_context *) { return static_cast<ibv_pd *>(fail_null()); }
int ibv_dealloc_pd(struct ibv_pd *) { return EOPNOTSUPP; }
struct ibv_mr *ibv_reg_mr(struct ibv_pd *, void *, size_t, int) { return static_cast<ibv_mr *>(fail_null()); }
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *, void *, size_t, uint64_t, int)
{
	return static_cast<ibv_mr *>(fail_null());
}
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *, void *, size_t, uint64_t, unsigned int)
{
	return static_cast<ibv_mr *>(fail_null());
}
int ibv_dereg_mr(struct ibv_mr *) { return EOPNOTSUPP; }
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *)
{
	return static_cast<ibv_comp_channel *>(fail_null());
}
int ibv_destroy_comp_channel(struct ibv_comp_channel *) { return EOPNOTSUPP; }
struct ibv_cq *ibv_create_cq(struct ibv_context *, int, void *, struct ibv_comp_channel *, int)
{
	return static_cast<ibv_cq *>(fail_null());
}
int ibv_destroy_cq(struct ibv_cq *) { return EOPNOTSUPP; }
int ibv_get_cq_event(struct ibv_comp_channel *, struct ibv_cq **, void **) { return fail_minus_one(); }
void ibv_ack_cq_events(struct ibv_cq *, unsigned int) {}
struct ibv_qp *ibv_create_qp(struct ibv_pd *, struct ibv_qp_init_attr *) { return static_cast<ibv_qp *>(fail_null()); }
int ibv_query_qp(struct ibv_qp *, struct ibv_qp_attr *, int, struct ibv_qp_init_attr *) { return EOPNOTSUPP; }
int ibv_modify_qp(struct ibv_qp *, struct ibv_qp_attr *, int) { return EOPNOTSUPP; }
int ibv_destroy_qp(struct ibv_qp *) { return EOPNOTSUPP; }
struct ibv_ah *ibv_create_ah(struct ibv_pd *, struct ibv_ah_attr *) { return static_cast<ibv_ah *>(fail_null()); }
int ibv_destroy_ah(struct ibv_ah *) { return EOPNOTSUPP; }
struct ibv_srq *ibv_create_srq(struct ibv_pd *, struct ibv_srq_init_attr *) { return static_cast<ibv_srq *>(fail_null()); }
int ibv_modify_srq(struct ibv_srq *, struct ibv_srq_attr *, int) { return EOPNOTSUPP; }
int ibv_query_srq(struct ibv_srq *, struct ibv_srq_attr *) { return EOPNOTSUPP; }
int ibv_destroy_srq(struct ibv_srq *) { return EOPNOTSUPP; }
int ibv_get_async_event(struct ibv_context *, struct ibv_async_event *) { return fail_minus_one(); }
void ibv_ack_async_event(struct ibv_async_event *) {}
int ibv_fork_init(void) { return EOPNOTSUPP; }
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *) { return nullptr; }
enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_DISABLED; }
int ibv_dofork_range(void *, size_t) { return EOPNOTSUPP; }
int ibv_dontfork_range(void *, size_t) { return EOPNOTSUPP; }

int ibv_init_ah_from_wc(struct ibv_context *, uint8_t, struct ibv_wc *, struct ibv_grh *, struct ibv_ah_attr *)
{
	return fail_minus_one();
}
struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *, struct ibv_wc *, struct ibv_grh *, uint8_t)
{
	return static_cast<ibv_ah *>(fail_null());
}

} // extern "C"

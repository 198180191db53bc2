// Behaviour of the libibverbs.so.1 users load (nic_emu/verbs' verbs_lib) where
// no emulated device is involved: outside `rocefab run` the device list is
// empty, verbs the emulated NIC lacks fail the way rdma-core 44 fails for an
// unsupported operation, the compat versions are distinct functions, and the
// helpers that need no device give rdma-core's answers. The verbs that reach a
// device are tested with a daemon elsewhere (tests/nic_emu, tests/e2e).
//
// The library is dlopen()ed (path in ROCEFAB_ABI_LIB) rather than linked, so
// this binary never depends on which libibverbs.so.1 the loader would pick.

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <string>

namespace {

class abi_library : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const char* path = std::getenv("ROCEFAB_ABI_LIB");
        ASSERT_NE(path, nullptr) << "ROCEFAB_ABI_LIB must name the built libibverbs.so.1";
        // No daemon: the library must answer as on a host without RDMA devices.
        unsetenv("ROCEFAB_SOCKET");
        unsetenv("ROCEFAB_HOST");
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(handle, nullptr) << dlerror();
    }

    // The default (@@) version, as a normally linked program would bind it.
    template <typename Fn> static Fn* get(const char* name) {
        void* sym = dlsym(handle, name);
        EXPECT_NE(sym, nullptr) << name << ": " << dlerror();
        return reinterpret_cast<Fn*>(sym);
    }

    template <typename Fn> static Fn* get_version(const char* name, const char* version) {
        void* sym = dlvsym(handle, name, version);
        EXPECT_NE(sym, nullptr) << name << "@" << version << ": " << dlerror();
        return reinterpret_cast<Fn*>(sym);
    }

    static inline void* handle = nullptr;
};

TEST_F(abi_library, outside_a_fabric_the_device_list_is_empty_as_on_a_host_without_rdma_devices) {
    // rdma-core 44 on a host whose verbs class (ib_uverbs) holds no device
    // returns an empty, NULL-terminated list and sets *num to 0; so does ours
    // when no daemon is named. ibv_devices then prints an empty table, and
    // programs report "no devices" instead of a library error.
    int num = 42;
    ibv_device** list = get<ibv_device**(int*)>("ibv_get_device_list")(&num);
    ASSERT_NE(list, nullptr) << std::strerror(errno);
    EXPECT_EQ(num, 0);
    EXPECT_EQ(list[0], nullptr);
    get<void(ibv_device**)>("ibv_free_device_list")(list);

    // num is optional.
    list = get<ibv_device**(int*)>("ibv_get_device_list")(nullptr);
    ASSERT_NE(list, nullptr) << std::strerror(errno);
    EXPECT_EQ(list[0], nullptr);
    get<void(ibv_device**)>("ibv_free_device_list")(list);
}

TEST_F(abi_library, int_verbs_without_support_return_eopnotsupp_as_errno_value) {
    EXPECT_EQ(get<int(ibv_cq*, int)>("ibv_resize_cq")(nullptr, 16), EOPNOTSUPP);
    EXPECT_EQ(get<int(ibv_qp*, const ibv_gid*, uint16_t)>("ibv_attach_mcast")(nullptr, nullptr, 0), EOPNOTSUPP);
    EXPECT_EQ(get<int(ibv_qp*, ibv_ece*)>("ibv_query_ece")(nullptr, nullptr), EOPNOTSUPP);
    EXPECT_EQ(get<int(ibv_qp*, ibv_ece*)>("ibv_set_ece")(nullptr, nullptr), EOPNOTSUPP);
    EXPECT_EQ(get<int(ibv_context*, void*)>("execute_ioctl")(nullptr, nullptr), EOPNOTSUPP);
    EXPECT_EQ(get<int(ibv_cq*, int)>("ibv_cmd_req_notify_cq")(nullptr, 0), EOPNOTSUPP);
}

TEST_F(abi_library, pointer_verbs_without_support_return_null_and_set_errno) {
    errno = 0;
    EXPECT_EQ(get<ibv_context*(int)>("ibv_import_device")(3), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_EQ(
        (get<ibv_mr*(ibv_pd*, uint64_t, size_t, uint64_t, int, int)>("ibv_reg_dmabuf_mr")(nullptr, 0, 4096, 0, -1, 0)),
        nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_EQ(get<ibv_context*(ibv_device*, void*)>("verbs_open_device")(nullptr, nullptr), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(abi_library, verbs_documented_as_minus_one_return_minus_one_with_errno) {
    errno = 0;
    EXPECT_EQ(get<int(ibv_cq*, int, ibv_wc*)>("ibv_cmd_poll_cq")(nullptr, 1, nullptr), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(abi_library, rereg_mr_reports_the_old_mr_as_still_valid) {
    errno = 0;
    EXPECT_EQ((get<int(ibv_mr*, int, ibv_pd*, void*, size_t, int)>("ibv_rereg_mr")(nullptr, IBV_REREG_MR_CHANGE_ACCESS,
                                                                                   nullptr, nullptr, 0, 0)),
              IBV_REREG_MR_ERR_INPUT);
    EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(abi_library, data_in_order_query_never_claims_ordering) {
    EXPECT_EQ(get<int(ibv_qp*, ibv_wr_opcode, uint32_t)>("ibv_query_qp_data_in_order")(nullptr, IBV_WR_RDMA_WRITE, 0),
              0);
}

TEST_F(abi_library, sysfs_path_is_slash_sys_and_reads_fail_with_enoent_where_no_device_is) {
    // rdma-core always names a path; outside `rocefab run` no device is under it.
    unsetenv("SYSFS_PATH");
    EXPECT_STREQ(get<const char*()>("ibv_get_sysfs_path")(), "/sys");
    char buf[16];
    errno = 0;
    EXPECT_EQ((get<int(const char*, const char*, char*, size_t)>("ibv_read_sysfs_file")("/sys/class/infiniband/x",
                                                                                        "node_guid", buf, sizeof(buf))),
              -1);
    EXPECT_EQ(errno, ENOENT);
}

TEST_F(abi_library, read_sysfs_file_strips_the_newline_as_rdma_core_does) {
    char dir[] = "/tmp/rocefab-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string file = std::string(dir) + "/fw_ver";
    FILE* f = fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("1.2.3\n", f);
    fclose(f);
    char buf[16];
    EXPECT_EQ(
        (get<int(const char*, const char*, char*, size_t)>("ibv_read_sysfs_file")(dir, "fw_ver", buf, sizeof(buf))), 5);
    EXPECT_STREQ(buf, "1.2.3");
    char small[3];
    errno = 0;
    EXPECT_EQ(
        (get<int(const char*, const char*, char*, size_t)>("ibv_read_sysfs_file")(dir, "fw_ver", small, sizeof(small))),
        -1);
    unlink(file.c_str());
    rmdir(dir);
}

TEST_F(abi_library, provider_registration_is_ignored_and_finds_no_device) {
    // A provider constructor passes a pointer to its static ops table; we must
    // neither keep it nor ever call it: the list of devices stays ours alone
    // (here, with no daemon, empty), and an all-zero table would crash if
    // anything reached through it.
    static const char fake_ops[256] = {};
    get<void(const void*)>("verbs_register_driver_34")(fake_ops);
    get_version<void(const char*, void*)>("ibv_register_driver", "IBVERBS_1.1")("mlx4", nullptr);
    int num = 42;
    ibv_device** list = get<ibv_device**(int*)>("ibv_get_device_list")(&num);
    ASSERT_NE(list, nullptr) << std::strerror(errno);
    EXPECT_EQ(num, 0);
    EXPECT_EQ(list[0], nullptr);
    get<void(ibv_device**)>("ibv_free_device_list")(list);
}

TEST_F(abi_library, compat_1_0_versions_are_separate_functions_that_fail) {
    auto* v1_0 = get_version<void**(int*)>("ibv_get_device_list", "IBVERBS_1.0");
    auto* v1_1 = get_version<void**(int*)>("ibv_get_device_list", "IBVERBS_1.1");
    ASSERT_NE(v1_0, nullptr);
    EXPECT_NE(reinterpret_cast<void*>(v1_0), reinterpret_cast<void*>(v1_1));
    EXPECT_EQ(reinterpret_cast<void*>(v1_1), dlsym(handle, "ibv_get_device_list"))
        << "the unversioned lookup must find the IBVERBS_1.1 default";
    int num = 42;
    errno = 0;
    EXPECT_EQ(v1_0(&num), nullptr);
    EXPECT_EQ(num, 0);
    EXPECT_EQ(errno, EOPNOTSUPP);

    auto* create_cq_1_0 = get_version<void*(void*, int, void*, ibv_comp_channel*, int)>("ibv_create_cq", "IBVERBS_1.0");
    errno = 0;
    EXPECT_EQ(create_cq_1_0(nullptr, 16, nullptr, nullptr, 0), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);

    EXPECT_EQ(dlsym(handle, "ibv_register_driver"), nullptr)
        << "ibv_register_driver has only a compat version in rdma-core 44";
    EXPECT_EQ(dlsym(handle, "ibv_get_device_list_v1_0"), nullptr) << "implementation names must stay local";
}

TEST_F(abi_library, status_strings_are_rdma_cores) {
    auto* wc_status_str = get<const char*(ibv_wc_status)>("ibv_wc_status_str");
    EXPECT_STREQ(wc_status_str(IBV_WC_SUCCESS), "success");
    EXPECT_STREQ(wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
    EXPECT_STREQ(wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR), "RNR retry counter exceeded");
    EXPECT_STREQ(wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
    EXPECT_STREQ(wc_status_str(IBV_WC_TM_RNDV_INCOMPLETE), "TM software rendezvous");
    EXPECT_STREQ(wc_status_str(static_cast<ibv_wc_status>(99)), "unknown");

    auto* port_state_str = get<const char*(ibv_port_state)>("ibv_port_state_str");
    EXPECT_STREQ(port_state_str(IBV_PORT_ACTIVE), "active");
    EXPECT_STREQ(port_state_str(IBV_PORT_NOP), "no state change (NOP)");

    auto* node_type_str = get<const char*(ibv_node_type)>("ibv_node_type_str");
    EXPECT_STREQ(node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
    EXPECT_STREQ(node_type_str(IBV_NODE_UNKNOWN), "unknown");

    auto* event_type_str = get<const char*(ibv_event_type)>("ibv_event_type_str");
    EXPECT_STREQ(event_type_str(IBV_EVENT_PORT_ERR), "port error");
    EXPECT_STREQ(event_type_str(IBV_EVENT_WQ_FATAL), "WQ fatal");
}

TEST_F(abi_library, rate_conversions_are_rdma_cores) {
    EXPECT_EQ(get<int(ibv_rate)>("ibv_rate_to_mult")(IBV_RATE_40_GBPS), 16);
    EXPECT_EQ(get<int(ibv_rate)>("ibv_rate_to_mult")(IBV_RATE_100_GBPS), -1);
    EXPECT_EQ(get<ibv_rate(int)>("mult_to_ibv_rate")(480), IBV_RATE_1200_GBPS);
    EXPECT_EQ(get<int(ibv_rate)>("ibv_rate_to_mbps")(IBV_RATE_100_GBPS), 103125);
    EXPECT_EQ(get<ibv_rate(int)>("mbps_to_ibv_rate")(25781), IBV_RATE_25_GBPS);
    EXPECT_EQ(get<ibv_rate(int)>("mbps_to_ibv_rate")(25000), IBV_RATE_MAX);
}

TEST_F(abi_library, qp_attr_copy_from_kernel_layout_keeps_every_field) {
    ib_uverbs_qp_attr kern{};
    kern.qp_state = IBV_QPS_RTS;
    kern.path_mtu = IBV_MTU_4096;
    kern.qkey = 0x11111111;
    kern.dest_qp_num = 0xabcdef;
    kern.max_send_wr = 128;
    kern.max_inline_data = 220;
    kern.ah_attr.grh.dgid[15] = 7;
    kern.ah_attr.grh.flow_label = 0x12345;
    kern.ah_attr.dlid = 0x42;
    kern.ah_attr.is_global = 1;
    kern.alt_ah_attr.port_num = 2;
    kern.pkey_index = 3;
    kern.timeout = 14;
    kern.rnr_retry = 7;
    kern.alt_timeout = 9;

    ibv_qp_attr attr{};
    get<void(ibv_qp_attr*, ib_uverbs_qp_attr*)>("ibv_copy_qp_attr_from_kern")(&attr, &kern);
    EXPECT_EQ(attr.qp_state, IBV_QPS_RTS);
    EXPECT_EQ(attr.path_mtu, IBV_MTU_4096);
    EXPECT_EQ(attr.qkey, 0x11111111u);
    EXPECT_EQ(attr.dest_qp_num, 0xabcdefu);
    EXPECT_EQ(attr.cap.max_send_wr, 128u);
    EXPECT_EQ(attr.cap.max_inline_data, 220u);
    EXPECT_EQ(attr.ah_attr.grh.dgid.raw[15], 7);
    EXPECT_EQ(attr.ah_attr.grh.flow_label, 0x12345u);
    EXPECT_EQ(attr.ah_attr.dlid, 0x42);
    EXPECT_EQ(attr.ah_attr.is_global, 1);
    EXPECT_EQ(attr.alt_ah_attr.port_num, 2);
    EXPECT_EQ(attr.pkey_index, 3);
    EXPECT_EQ(attr.timeout, 14);
    EXPECT_EQ(attr.rnr_retry, 7);
    EXPECT_EQ(attr.alt_timeout, 9);
}

TEST_F(abi_library, verbs_init_cq_takes_a_reference_on_the_completion_channel) {
    ibv_context context{};
    pthread_mutex_init(&context.mutex, nullptr);
    ibv_comp_channel channel{};
    channel.context = &context;
    ibv_cq cq{};
    int cookie = 0;
    get<void(ibv_cq*, ibv_context*, ibv_comp_channel*, void*)>("verbs_init_cq")(&cq, &context, &channel, &cookie);
    EXPECT_EQ(cq.context, &context);
    EXPECT_EQ(cq.channel, &channel);
    EXPECT_EQ(cq.cq_context, &cookie);
    EXPECT_EQ(channel.refcnt, 1);
    EXPECT_EQ(cq.comp_events_completed, 0u);
    pthread_mutex_destroy(&cq.mutex);
    pthread_cond_destroy(&cq.cond);
    pthread_mutex_destroy(&context.mutex);
}

TEST_F(abi_library, ioctl_attribute_count_without_links_is_the_base_count) {
    EXPECT_EQ(get<unsigned(unsigned, void*)>("__ioctl_final_num_attrs")(5, nullptr), 5u);
}

} // namespace

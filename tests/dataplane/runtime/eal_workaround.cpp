// DPDK 22.11 refuses dataplane/eal.cpp's --no-huge --in-memory ("Option --legacy-mem is not
// compatible with --in-memory": --no-huge implies legacy memory). Until eal.cpp is fixed, this
// binary starts the EAL first with --no-huge --no-shconf, which gives the same isolation (no
// shared files); start_eal() runs once, so test_pool() then reuses this EAL.
#include "dataplane/eal.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

namespace {

class eal_first final : public ::testing::Environment {
public:
    void SetUp() override {
        rocefab::eal_options options;
        options.file_prefix = "rocefab-test-" + std::to_string(::getpid());
        options.use_hugepages = true; // i.e. do not add --no-huge --in-memory: given below instead
        options.extra_args = {"--no-huge", "--no-shconf", "-m", "256"};
        std::string error;
        ASSERT_TRUE(rocefab::start_eal(options, error)) << error;
    }
};

[[maybe_unused]] auto* const registered = ::testing::AddGlobalTestEnvironment(new eal_first);

} // namespace

// The daemon's reach into a program's memory (nic_emu/process_memory.hpp), tried on this test
// process itself: it opens its own /proc/self/mem and maps, as a program does for the daemon.
#include "nic_emu/counters.hpp"
#include "nic_emu/process_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <numeric>
#include <utility>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace rocefab::nic {
namespace {

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// The NIC's view of it: the one-range read and write are address_space's.
address_space& as_space(process_memory& m) { return m; }

std::unique_ptr<process_memory> own_memory() {
    std::string why;
    auto memory = process_memory::adopt(::open("/proc/self/mem", O_RDWR | O_CLOEXEC),
                                        ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC), ::getpid(), why);
    EXPECT_TRUE(memory) << why;
    return memory;
}

// A memfd of `pages` pages as the verbs library makes one, mapped here as the program's pages.
struct program_pages {
    explicit program_pages(std::size_t pages, int seals = F_SEAL_SHRINK | F_SEAL_GROW) : length(pages * page) {
        fd = ::memfd_create("test-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(length)), 0);
        if (seals != 0) {
            EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, seals), 0);
        }
        base = static_cast<std::uint8_t*>(::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        EXPECT_NE(base, MAP_FAILED);
    }
    ~program_pages() {
        ::munmap(base, length);
        if (fd >= 0) ::close(fd);
    }
    std::uint64_t address() const { return reinterpret_cast<std::uint64_t>(base); }
    int take() { return std::exchange(fd, -1); }

    std::size_t length;
    int fd = -1;
    std::uint8_t* base = nullptr;
};

TEST(process_memory, pages_on_a_memfd_are_copied_through_the_daemons_own_mapping) {
    auto memory = own_memory();
    nic_counters counters;
    memory->count_into(&counters);
    program_pages pages(4);
    process_memory::shared_mapping mapping;
    std::string why;
    ASSERT_TRUE(process_memory::map_shared(pages.take(), pages.address(), pages.length, pages.address(), pages.length,
                                           mapping, why))
        << why;
    memory->add_shared(mapping, 7);

    // A write of two pieces into the middle, then a read back: both by plain copy.
    std::vector<std::uint8_t> a(3000), b(5000);
    std::iota(a.begin(), a.end(), std::uint8_t{1});
    std::iota(b.begin(), b.end(), std::uint8_t{50});
    iovec local[] = {{a.data(), a.size()}, {b.data(), b.size()}};
    iovec remote[] = {{pages.base + 100, 8000}};
    ASSERT_TRUE(memory->write(local, remote));
    EXPECT_EQ(std::memcmp(pages.base + 100, a.data(), a.size()), 0);
    EXPECT_EQ(std::memcmp(pages.base + 3100, b.data(), b.size()), 0);
    std::vector<std::uint8_t> back(8000);
    ASSERT_TRUE(as_space(*memory).read(pages.address() + 100, back.data(), back.size()));
    EXPECT_EQ(std::memcmp(back.data(), pages.base + 100, back.size()), 0);
    EXPECT_EQ(counters.dma_shared_bytes, 16000u);
    EXPECT_EQ(counters.dma_proc_mem_bytes, 0u);

    // Past the memfd's end: the whole access goes through /proc/self/mem.
    std::vector<std::uint8_t> outside(2 * page);
    ASSERT_TRUE(as_space(*memory).read(reinterpret_cast<std::uint64_t>(outside.data()), back.data(), page));
    EXPECT_EQ(counters.dma_proc_mem_bytes, page);

    // Once the MR is gone, so is the mapping: the same access takes /proc/self/mem.
    memory->remove_shared(7);
    ASSERT_TRUE(as_space(*memory).read(pages.address(), back.data(), 100));
    EXPECT_EQ(counters.dma_shared_bytes, 16000u);
    EXPECT_EQ(counters.dma_proc_mem_bytes, page + 100);
}

TEST(process_memory, a_memfd_that_could_shrink_or_does_not_cover_the_pages_is_refused) {
    process_memory::shared_mapping mapping;
    std::string why;
    {
        program_pages unsealed(2, 0); // could be truncated under the daemon's mapping: a SIGBUS
        EXPECT_FALSE(process_memory::map_shared(unsealed.take(), unsealed.address(), unsealed.length,
                                                unsealed.address(), unsealed.length, mapping, why));
        EXPECT_NE(why.find("sealed against shrinking"), std::string::npos) << why;
    }
    {
        program_pages short_file(2);
        EXPECT_FALSE(process_memory::map_shared(short_file.take(), short_file.address(), 4 * page, short_file.address(),
                                                4 * page, mapping, why));
        EXPECT_NE(why.find("shorter"), std::string::npos) << why;
    }
    {
        program_pages pages(2);
        EXPECT_FALSE(process_memory::map_shared(pages.take(), pages.address() + 8, pages.length - page, pages.address(),
                                                pages.length, mapping, why));
        EXPECT_NE(why.find("whole pages within the region"), std::string::npos) << why;
    }
    {
        program_pages pages(2); // the MR covers only the first page
        EXPECT_FALSE(process_memory::map_shared(pages.take(), pages.address(), pages.length, pages.address(), page,
                                                mapping, why));
        EXPECT_NE(why.find("whole pages within the region"), std::string::npos) << why;
    }
    {
        int pipe_ends[2];
        ASSERT_EQ(::pipe(pipe_ends), 0);
        ::close(pipe_ends[1]);
        std::vector<std::uint8_t> region(2 * page);
        const auto at = (reinterpret_cast<std::uint64_t>(region.data()) + page - 1) / page * page;
        EXPECT_FALSE(process_memory::map_shared(pipe_ends[0], at, page, at, page, mapping, why));
        EXPECT_NE(why.find("not a memfd"), std::string::npos) << why;
    }
    EXPECT_EQ(mapping.view, nullptr);
}

} // namespace
} // namespace rocefab::nic

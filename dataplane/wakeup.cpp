#include "dataplane/wakeup.hpp"

#include <array>
#include <cerrno>
#include <fcntl.h>
#include <new>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <system_error>
#include <unistd.h>

namespace rocefab {

namespace {

constexpr std::size_t page_size = 4096;
// What an epoll event names: the data plane's own eventfd, or some program's doorbell. A
// doorbell is never named by its descriptor: a program's session may close it while the data
// plane is handling the event, and the number may already name something else.
constexpr std::uint64_t own_event = 1, program_event = 0;

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void drain(int eventfd) {
    std::uint64_t count;
    [[maybe_unused]] const auto got = ::read(eventfd, &count, sizeof count);
}

} // namespace

wakeup::wakeup() {
    _epoll = ::epoll_create1(EPOLL_CLOEXEC);
    if (_epoll < 0) fail("epoll_create1");
    _own = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (_own < 0) fail("eventfd");
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = own_event;
    if (::epoll_ctl(_epoll, EPOLL_CTL_ADD, _own, &event) != 0) fail("epoll_ctl");
    // The page: written here through the mapping made before sealing; programs may only map it
    // read-only, and nobody may change its size (a truncated page would SIGBUS its readers).
    _page_fd = ::memfd_create("rocefab-wake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (_page_fd < 0) fail("memfd_create");
    if (::ftruncate(_page_fd, page_size) != 0) fail("ftruncate");
    void* page = ::mmap(nullptr, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, _page_fd, 0);
    if (page == MAP_FAILED) fail("mmap");
    _flag = new (page) wake_flag;
    if (::fcntl(_page_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0)
        fail("sealing the wake page");
}

wakeup::~wakeup() {
    if (_flag) ::munmap(_flag, page_size);
    for (int fd : {_page_fd, _own, _epoll})
        if (fd >= 0) ::close(fd);
}

int wakeup::add_doorbell() {
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return -1;
    // Edge-triggered: every write of the program is an event, and its count is never read back
    // (so the descriptor is never touched after the program's session closes it).
    epoll_event event{};
    event.events = EPOLLIN | EPOLLET;
    event.data.u64 = program_event;
    if (::epoll_ctl(_epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

void wakeup::remove_doorbell(int fd) {
    ::epoll_ctl(_epoll, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
}

void wakeup::wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(_own, &one, sizeof one);
}

void wakeup::prepare_to_sleep() {
    _flag->sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

void wakeup::cancel_sleep() { _flag->sleeping.store(0, std::memory_order_relaxed); }

void wakeup::sleep(std::int64_t nanoseconds) {
    std::array<epoll_event, 64> ready;
    const timespec timeout{static_cast<time_t>(nanoseconds / 1'000'000'000),
                           static_cast<long>(nanoseconds % 1'000'000'000)};
    const int n = ::epoll_pwait2(_epoll, ready.data(), static_cast<int>(ready.size()), &timeout, nullptr);
    _flag->sleeping.store(0, std::memory_order_relaxed);
    // The own eventfd is level-triggered: read back to zero, or the next sleep would not sleep.
    for (int i = 0; i < n; ++i)
        if (ready[i].data.u64 == own_event) drain(_own);
}

} // namespace rocefab

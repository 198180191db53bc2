// A blocking call interrupted by a signal, as a program with a timer sees it: SIGALRM 50 ms
// after the call starts, its handler installed without SA_RESTART, so a call that makes one
// system call returns -1 with EINTR. A call that swallows the signal and waits on is still
// blocked at the second alarm, a second later: the handler then prints a FAILED line and ends
// the program with status 1, where a test would otherwise hang.
#pragma once

#include <cerrno>
#include <csignal>
#include <sys/time.h>
#include <unistd.h>

namespace rocefab::test_programs {

namespace detail {
inline volatile std::sig_atomic_t alarms = 0;

inline void on_alarm(int) {
    alarms = alarms + 1;
    if (alarms < 2) return;
    static const char stuck[] = "FAILED: the wait went on after a signal interrupted it\n";
    [[maybe_unused]] const auto written = ::write(STDOUT_FILENO, stuck, sizeof stuck - 1);
    ::_exit(1);
}
} // namespace detail

// Calls `wait` under the alarm; returns what it returned, with its errno in `error`.
template <typename Wait> int call_interrupted(Wait wait, int& error) {
    struct sigaction action {};
    action.sa_handler = detail::on_alarm;
    ::sigaction(SIGALRM, &action, nullptr);
    detail::alarms = 0;
    itimerval timer{};
    timer.it_value.tv_usec = 50'000;
    timer.it_interval.tv_sec = 1;
    ::setitimer(ITIMER_REAL, &timer, nullptr);
    errno = 0;
    const int got = wait();
    error = errno;
    const itimerval off{};
    ::setitimer(ITIMER_REAL, &off, nullptr);
    std::signal(SIGALRM, SIG_DFL);
    return got;
}

} // namespace rocefab::test_programs

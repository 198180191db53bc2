// How an idle data plane sleeps and is woken. It waits in epoll on eventfds: one of its own, for
// the control plane (the mailbox, a stop), and one a program, each program's doorbell. Before
// it sleeps it raises the wake_flag (dataplane/wake_flag.hpp) in a page the programs map
// read-only, so a program rings only a sleeping data plane.
//
// Nothing a program does reaches another: its doorbell is its own descriptor, and the page is
// sealed (it can be neither resized nor mapped writable), so a program can neither scribble on
// the flag nor take away the memory under it.
#pragma once

#include "dataplane/wake_flag.hpp"

#include <cstdint>

namespace rocefab {

class wakeup {
public:
    // Throws std::system_error when the kernel refuses an epoll set, an eventfd or the page.
    wakeup();
    ~wakeup();
    wakeup(const wakeup&) = delete;
    wakeup& operator=(const wakeup&) = delete;

    // Any thread: a new doorbell for a program (an eventfd the data plane listens to), or -1
    // with errno set. The caller passes it to the program and gives it back to remove_doorbell.
    int add_doorbell();
    void remove_doorbell(int fd); // and closes it
    // A descriptor of the sealed page holding the flag, for programs to map read-only.
    int flag_page_fd() const { return _page_fd; }

    // Any thread: cuts the data plane's sleep short, or makes its next one return at once.
    void wake();
    // Any thread, after publishing work: wake() if the data plane sleeps (wake_flag.hpp).
    void ring() { rocefab::ring(*_flag, _own); }

    // The data plane thread: raise the flag, then (after one more look for work) sleep.
    void prepare_to_sleep();
    void cancel_sleep();
    // Sleeps up to `nanoseconds`; returns early when a doorbell rings or wake() is called, also
    // if that happened since prepare_to_sleep().
    void sleep(std::int64_t nanoseconds);

private:
    int _epoll = -1;
    int _own = -1;     // the control plane's eventfd
    int _page_fd = -1; // the sealed memfd holding `_flag`
    wake_flag* _flag = nullptr;
};

} // namespace rocefab

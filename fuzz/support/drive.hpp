// Time for one node under a fuzzer, the way the virtual-time driver gives it: poll at the
// instant frames arrived, then jump from deadline to deadline. Bounded, so that a node that
// keeps asking for work cannot hang the fuzzer (libFuzzer would report a timeout, not a bug).
#pragma once

#include "dataplane/node.hpp"

#include <algorithm>

namespace rocefab::fuzz {

class node_clock {
public:
    sim_time now() const { return _now; }

    // Polls at now until the node has nothing more to do there (as the driver's rounds do).
    void settle(node& n) {
        for (int round = 0; round < max_rounds; ++round)
            if (!n.poll(_now)) break;
        _done_through = _now;
    }

    // Lets `span` pass: polls at each deadline the node asks for on the way.
    void advance(node& n, sim_time span) {
        const sim_time until = _now + span;
        for (int step = 0; step < max_steps; ++step) {
            sim_time t = n.next_deadline();
            if (t == never) break;
            t = std::max(t, _now);
            if (t <= _done_through) t = _done_through + 1; // an instant is processed once (driver's rule)
            if (t > until) break;
            _now = t;
            settle(n);
        }
        _now = std::max(_now, until);
        settle(n);
    }

private:
    static constexpr int max_rounds = 8;
    static constexpr int max_steps = 64;
    sim_time _now = 0;
    sim_time _done_through = -1;
};

} // namespace rocefab::fuzz

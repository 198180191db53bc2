// DCQCN (Zhu et al., SIGCOMM 2015) as a ConnectX runs it: the notification point (NP) answers
// CE-marked RoCE packets with CNPs, and the reaction point (RP) keeps a rate per QP, cut when
// CNPs arrive and raised again by a timer and a byte counter.
//
// Knobs carry the names and units of the mlx5 congestion-control parameters (debugfs
// cc_params, sysfs ecn/roce_rp and roce_np). Defaults are what `mlxconfig query` prints on
// ConnectX-4 Lx to BlueField-3 and what NVIDIA's DOCA "DCQCN CC Parameters" page gives where
// the two overlap; docs/dcqcn.md lists the sources and where they disagree. The reaction point's
// equations, with alpha (a) a fraction of 1 and rates in bit/s:
//   alpha, every dce_tcp_rtt:  a = G a + (1 - G) [a CNP arrived in the period],  G = dce_tcp_g / 1024
//   decrease, at most once per rate_reduce_monitor_period, when a CNP arrived:
//       RT = RC  if clamp_tgt_rate, or if the rate was raised since the last decrease;
//       RC = max(RC (1 - a 1024 / 2^rpg_gd), RC rpg_min_dec_fac / 100, rpg_min_rate)
//       (rpg_gd 11 is the paper's RC (1 - a/2)); the increase stages start again.
//   increase, each time rpg_time_reset passes (T += 1) or rpg_byte_reset bytes are sent
//   (BC += 1), with F = rpg_threshold:
//       max(T, BC) <= F: fast recovery   RC = (RT + RC) / 2
//       min(T, BC) >  F: hyper increase  RT += (min(T, BC) - F) rpg_hai_rate, RC = (RT + RC) / 2
//       otherwise:       additive        RT += rpg_ai_rate,                   RC = (RT + RC) / 2
//       RT never exceeds the line rate (or rpg_max_rate); RC within 1 Mb/s of RT is RT.
//   the first CNP: a = initial_alpha_value / 1024, RC = RT = rate_to_set_on_first_cnp (0: line
//   rate), then the decrease.
// Time is lazy: nothing runs between calls; advance() catches up on every period that passed,
// so a QP costs no work while its rate is at line rate.
#pragma once

#include "dataplane/time.hpp"

#include <cstdint>

namespace rocefab::nic {

struct dcqcn_params {
    // Reaction point (rpg: rate-generator).
    sim_time rpg_time_reset = 300'000;     // ns between timer increases (mlx5: 300 us)
    std::uint32_t rpg_byte_reset = 32'767; // bytes sent between byte-counter increases; 0: off
    std::uint32_t rpg_threshold = 1;       // F: increase events before additive, then hyper increase
    std::uint64_t rpg_max_rate_mbps = 0;   // 0: the line rate
    std::uint64_t rpg_ai_rate_mbps = 5;
    std::uint64_t rpg_hai_rate_mbps = 50;
    std::uint32_t rpg_gd = 11;          // a decrease takes a x 1024 / 2^rpg_gd of the rate
    std::uint32_t rpg_min_dec_fac = 50; // a decrease keeps at least this % of the rate
    std::uint64_t rpg_min_rate_mbps = 1;
    std::uint64_t rate_to_set_on_first_cnp_mbps = 0; // 0: the line rate
    std::uint32_t dce_tcp_g = 1019;                  // G x 1024: the weight alpha keeps each period
    sim_time dce_tcp_rtt = 1'000;                    // ns: the alpha update period
    sim_time rate_reduce_monitor_period = 4'000;     // ns: at most one decrease per period
    std::uint32_t initial_alpha_value = 1023;        // alpha x 1024 at the first CNP
    bool clamp_tgt_rate = false;
    bool clamp_tgt_rate_after_time_inc = true;
    // Notification point.
    sim_time min_time_between_cnps = 4'000; // ns: at most one CNP per QP per this time
    std::uint8_t cnp_dscp = 48;
    std::uint8_t cnp_802p_prio = 6;
};

// The rate of one QP.
class dcqcn_rate {
public:
    dcqcn_rate(const dcqcn_params& params, std::uint64_t line_rate_bps);

    // A CNP for this QP arrived.
    void on_cnp(sim_time now);
    // The QP handed a frame of `wire_bytes` (preamble to inter-frame gap) to the port: the byte
    // counter counts it and the pacer moves on by its time at the current rate.
    void on_sent(std::uint32_t wire_bytes, sim_time now);
    // Applies every alpha update, pending decrease and increase due by `now`.
    void advance(sim_time now);
    // The next time advance() has something to do; `never` while at line rate.
    sim_time next_event() const;

    // When the pacer lets the QP send its next frame (<= now: it may): the last frame's start
    // plus its time at the current rate, so that a rate raised meanwhile takes effect at once.
    sim_time next_send_time() const;
    bool limited() const { return _active; }
    double current_rate_bps() const { return _current; }
    double target_rate_bps() const { return _target; }
    double alpha() const { return _alpha; }
    unsigned timer_stage() const { return _timer_events; }
    unsigned byte_stage() const { return _byte_events; }

private:
    void update_alpha_until(sim_time now);
    void decrease(sim_time now);
    void increase(bool by_timer);
    void restart_stages(sim_time now);

    dcqcn_params _p;
    double _line;         // bit/s: the line rate, or rpg_max_rate if lower
    double _min_rate;     // bit/s
    bool _active = false; // cut by a CNP and not yet back at the line rate
    double _current, _target;
    double _alpha = 0;
    // Alpha periods run from the first CNP: _alpha_period_start is where the current one began.
    sim_time _alpha_period_start = 0;
    bool _cnp_in_alpha_period = false;
    sim_time _last_decrease = 0;
    bool _decrease_pending = false;
    bool _raised_since_decrease = false;
    sim_time _timer_start = 0; // the increase timer runs from here
    unsigned _timer_events = 0, _byte_events = 0;
    std::uint64_t _bytes_since_event = 0;
    sim_time _last_start = 0;           // when the pacer let the last frame go
    std::uint32_t _last_wire_bytes = 0; // and its size
};

// The CNP pacing of one QP as a notification point.
class dcqcn_notifier {
public:
    explicit dcqcn_notifier(const dcqcn_params& params) : _p(params) {}
    // A CE-marked packet arrived: whether to send a CNP for it now.
    bool should_notify(sim_time now) {
        if (_sent_any && now - _last_cnp < _p.min_time_between_cnps) return false;
        _sent_any = true;
        _last_cnp = now;
        return true;
    }

private:
    dcqcn_params _p;
    bool _sent_any = false;
    sim_time _last_cnp = 0;
};

} // namespace rocefab::nic

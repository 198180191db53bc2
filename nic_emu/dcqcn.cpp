#include "nic_emu/dcqcn.hpp"

#include <algorithm>
#include <cmath>

namespace rocefab::nic {
namespace {

constexpr double mbps = 1e6;

} // namespace

dcqcn_rate::dcqcn_rate(const dcqcn_params& params, std::uint64_t line_rate_bps) : _p(params) {
    _line = static_cast<double>(line_rate_bps);
    if (_p.rpg_max_rate_mbps) _line = std::min(_line, static_cast<double>(_p.rpg_max_rate_mbps) * mbps);
    _min_rate = std::min(_line, static_cast<double>(_p.rpg_min_rate_mbps) * mbps);
    _current = _target = _line;
}

void dcqcn_rate::on_cnp(sim_time now) {
    advance(now);
    if (!_active) {
        _active = true;
        _alpha = _p.initial_alpha_value / 1024.0;
        _alpha_period_start = now;
        _cnp_in_alpha_period = false;
        if (_p.rate_to_set_on_first_cnp_mbps)
            _current = std::min(_line, static_cast<double>(_p.rate_to_set_on_first_cnp_mbps) * mbps);
        _target = _current;
        _raised_since_decrease = false;
        _last_start = now;
        _last_wire_bytes = 0;
        return decrease(now);
    }
    _cnp_in_alpha_period = true;
    if (now - _last_decrease >= _p.rate_reduce_monitor_period)
        decrease(now);
    else
        _decrease_pending = true;
}

void dcqcn_rate::on_sent(std::uint32_t wire_bytes, sim_time now) {
    if (!_active) return;
    advance(now);
    _last_start = std::max(now, next_send_time());
    _last_wire_bytes = wire_bytes;
    if (!_p.rpg_byte_reset || !_active) return;
    _bytes_since_event += wire_bytes;
    while (_active && _bytes_since_event >= _p.rpg_byte_reset) {
        _bytes_since_event -= _p.rpg_byte_reset;
        ++_byte_events;
        increase(false);
    }
}

void dcqcn_rate::update_alpha_until(sim_time now) {
    const sim_time periods = (now - _alpha_period_start) / _p.dce_tcp_rtt;
    if (periods <= 0) return;
    const double keep = _p.dce_tcp_g / 1024.0;
    // The first period that ends may have seen a CNP; the rest cannot have (a CNP advances
    // alpha to its own time first).
    _alpha = keep * _alpha + (_cnp_in_alpha_period ? 1.0 - keep : 0.0);
    _alpha *= std::pow(keep, static_cast<double>(periods - 1));
    _cnp_in_alpha_period = false;
    _alpha_period_start += periods * _p.dce_tcp_rtt;
}

void dcqcn_rate::advance(sim_time now) {
    // Events in time order: each step applies the earliest one due, with alpha brought to it.
    while (_active) {
        const sim_time decrease_at = _decrease_pending ? _last_decrease + _p.rate_reduce_monitor_period : never;
        const sim_time increase_at = _timer_start + _p.rpg_time_reset;
        const sim_time due = std::min(decrease_at, increase_at);
        if (due > now) break;
        update_alpha_until(due);
        if (decrease_at <= increase_at) {
            decrease(due);
        } else {
            _timer_start = due;
            ++_timer_events;
            increase(true);
        }
    }
    if (_active) update_alpha_until(now);
}

sim_time dcqcn_rate::next_send_time() const {
    return _last_start + static_cast<sim_time>(std::ceil(_last_wire_bytes * 8e9 / _current));
}

sim_time dcqcn_rate::next_event() const {
    if (!_active) return never;
    const sim_time decrease_at = _decrease_pending ? _last_decrease + _p.rate_reduce_monitor_period : never;
    return std::min(decrease_at, _timer_start + _p.rpg_time_reset);
}

void dcqcn_rate::decrease(sim_time now) {
    if (_p.clamp_tgt_rate || _raised_since_decrease) _target = _current;
    const double cut = _current * (1.0 - _alpha * 1024.0 / std::ldexp(1.0, static_cast<int>(_p.rpg_gd)));
    _current = std::max({cut, _current * _p.rpg_min_dec_fac / 100.0, _min_rate});
    _last_decrease = now;
    _decrease_pending = false;
    _raised_since_decrease = false;
    restart_stages(now);
}

void dcqcn_rate::restart_stages(sim_time now) {
    _timer_start = now;
    _timer_events = _byte_events = 0;
    _bytes_since_event = 0;
}

void dcqcn_rate::increase(bool by_timer) {
    const unsigned f = _p.rpg_threshold;
    const unsigned most = std::max(_timer_events, _byte_events), least = std::min(_timer_events, _byte_events);
    if (most > f) {
        if (least > f)
            _target += (least - f) * static_cast<double>(_p.rpg_hai_rate_mbps) * mbps;
        else
            _target += static_cast<double>(_p.rpg_ai_rate_mbps) * mbps;
        _target = std::min(_target, _line);
    }
    _current = (_target + _current) / 2;
    // Timer increases count for the target's clamp only with clamp_tgt_rate_after_time_inc.
    if (!by_timer || _p.clamp_tgt_rate_after_time_inc) _raised_since_decrease = true;
    if (_target - _current < mbps) _current = _target;
    if (_current >= _line) { // back at line rate: nothing to pace, no timers
        _active = false;
        _decrease_pending = false;
    }
}

} // namespace rocefab::nic

#include "dataplane/log.hpp"

#include <spdlog/async.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>

namespace rocefab::log {

namespace {

std::shared_ptr<spdlog::logger> quiet(std::string_view name) {
    auto logger = std::make_shared<spdlog::logger>(std::string(name), std::make_shared<spdlog::sinks::null_sink_mt>());
    logger->set_level(spdlog::level::off);
    return logger;
}

std::array<std::shared_ptr<spdlog::logger>, component_count> make_quiet_loggers() {
    std::array<std::shared_ptr<spdlog::logger>, component_count> out;
    for (std::size_t i = 0; i < component_count; ++i) out[i] = quiet(component_names[i]);
    return out;
}

std::array<std::shared_ptr<spdlog::logger>, component_count> loggers = make_quiet_loggers();
std::shared_ptr<spdlog::details::thread_pool> writer;

std::optional<spdlog::level::level_enum> level_named(std::string_view name) {
    using namespace spdlog::level;
    static constexpr std::pair<std::string_view, level_enum> named[] = {
        {"trace", trace}, {"debug", debug},       {"info", info}, {"warn", warn},
        {"error", err},   {"critical", critical}, {"off", off}};
    for (const auto& [text, level] : named)
        if (text == name) return level;
    return std::nullopt;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

} // namespace

spdlog::logger& of(component c) { return *loggers[static_cast<std::size_t>(c)]; }

std::string parse_levels(std::string_view text, levels& out) {
    levels parsed = out;
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        const std::string_view item = trim(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        if (item.empty()) continue;
        const std::size_t equals = item.find('=');
        const std::string_view level_text = trim(equals == std::string_view::npos ? item : item.substr(equals + 1));
        const auto level = level_named(level_text);
        if (!level)
            return "unknown log level '" + std::string(level_text) + "' (valid: " + std::string(valid_levels) + ")";
        if (equals == std::string_view::npos) {
            parsed.all = *level;
            continue;
        }
        const std::string_view name = trim(item.substr(0, equals));
        std::size_t index = component_count;
        for (std::size_t i = 0; i < component_count; ++i)
            if (component_names[i] == name) index = i;
        if (index == component_count) {
            std::string valid;
            for (auto n : component_names) valid += (valid.empty() ? "" : ", ") + std::string(n);
            return "unknown log component '" + std::string(name) + "' (valid: " + valid + ")";
        }
        parsed.by_component[index] = *level;
    }
    out = parsed;
    return {};
}

void start(const levels& levels, const spdlog::sink_ptr& sink) {
    // One writer thread; 8192 queued messages, the oldest dropped when full: a burst of events
    // must not stall the data plane behind the log file.
    writer = std::make_shared<spdlog::details::thread_pool>(8192, 1);
    for (std::size_t i = 0; i < component_count; ++i) {
        auto logger = std::make_shared<spdlog::async_logger>(std::string(component_names[i]), sink, writer,
                                                             spdlog::async_overflow_policy::overrun_oldest);
        logger->set_level(levels.of(static_cast<component>(i)));
        logger->flush_on(spdlog::level::warn);
        loggers[i] = std::move(logger);
    }
}

void stop() {
    for (auto& logger : loggers) logger->flush();
    loggers = make_quiet_loggers();
    writer.reset(); // joins the writer thread once the loggers that shared it are gone
}

} // namespace rocefab::log
